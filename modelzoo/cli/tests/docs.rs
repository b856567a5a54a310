//! Docs that run: the shell blocks of the user docs are commands people paste, so every page
//! with commands is executed here, block by block in one shell, from the repository root (after
//! `make build`, as the docs say), writing only under a temporary `$WORK`; and every page is
//! checked to follow the conventions below, so a page that breaks them fails CI.
//!
//! Conventions in the Markdown (the markers are invisible when rendered):
//! - every fenced block names its language: `sh` for commands a reader pastes (never `bash`,
//!   `shell` or `console`), `text` for output and usage synopses, `yaml`, `json`, `python`,
//!   `rust`, `toml`, `markdown`, ... — only `sh` blocks are run;
//! - `<!-- doc-test: skip (why) -->` before a `sh` block: not run here, and why — it needs a
//!   card, a GPU, a dataset, the network, two machines, or is `make` itself;
//! - `<!-- doc-test: exit N -->` before a `sh` block: the block is expected to end with status N;
//! - `<!-- doc-test: run COMMAND -->`: a step the reader does by hand (writing a README), done
//!   here by COMMAND at that point.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    modelzoo_testkit::workspace_root()
}

/// Info strings of command blocks in other spellings: commands are tagged `sh` so that they run.
const OTHER_SHELL_TAGS: &[&str] = &["bash", "shell", "console", "shell-session", "zsh"];

#[derive(Debug, PartialEq)]
enum Step {
    /// A command block: its text, the exit status expected, the line it starts at.
    Block {
        text: String,
        exit: i32,
        line: usize,
    },
    /// A command the reader's hand stands in for.
    Hand(String),
}

/// What a page holds for the tests: its fenced blocks and its hand steps.
#[derive(Debug)]
enum Item {
    Fence(Fence),
    Hand(String),
}

/// A fenced block of a page, with the marker before it.
#[derive(Debug)]
struct Fence {
    info: String,
    marker: Option<String>,
    body: String,
    line: usize,
}

/// The fenced blocks and hand steps of a page in order, or the problems of its markup (an
/// untagged block, a shell block not tagged `sh`, a marker that precedes no block or another
/// marker, a marker before a block that is not `sh`, a skip without its reason, an unknown
/// marker).
fn parse(markdown: &str) -> Result<Vec<Item>, String> {
    let mut items = Vec::new();
    let mut pending: Option<(String, usize)> = None;
    let mut lines = markdown.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let trimmed = line.trim();
        if let Some(marker) = trimmed
            .strip_prefix("<!-- doc-test:")
            .and_then(|m| m.strip_suffix("-->"))
        {
            let marker = marker.trim();
            if let Some((m, at)) = &pending {
                return Err(format!(
                    "line {}: `{m}` (line {at}) precedes another marker, not a block",
                    i + 1
                ));
            }
            if let Some(cmd) = marker.strip_prefix("run ") {
                items.push(Item::Hand(cmd.trim().to_string()));
            } else if let Some(reason) = marker.strip_prefix("skip") {
                let reason = reason.trim();
                if !(reason.starts_with('(') && reason.ends_with(')') && reason.len() > 2) {
                    return Err(format!(
                        "line {}: `{marker}`: say why in parentheses, `skip (needs a card)`",
                        i + 1
                    ));
                }
                pending = Some((marker.to_string(), i + 1));
            } else if let Some(n) = marker.strip_prefix("exit ") {
                n.trim()
                    .parse::<i32>()
                    .map_err(|_| format!("line {}: `{marker}`: not an exit status", i + 1))?;
                pending = Some((marker.to_string(), i + 1));
            } else {
                return Err(format!("line {}: unknown marker `{marker}`", i + 1));
            }
            continue;
        }
        let Some(info) = trimmed.strip_prefix("```") else {
            continue;
        };
        let info = info.trim();
        if info.is_empty() {
            return Err(format!(
                "line {}: a code block without a language (`sh` for commands, `text` for output)",
                i + 1
            ));
        }
        if OTHER_SHELL_TAGS.contains(&info) {
            return Err(format!(
                "line {}: a `{info}` block: tag commands `sh` (they are run), output `text`",
                i + 1
            ));
        }
        let mut body = String::new();
        let mut closed = false;
        for (_, l) in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                closed = true;
                break;
            }
            body.push_str(l);
            body.push('\n');
        }
        if !closed {
            return Err(format!("line {}: the block is never closed", i + 1));
        }
        let marker = pending.take().map(|(m, _)| m);
        if info != "sh" {
            if let Some(m) = marker {
                return Err(format!("line {}: `{m}` marks a `{info}` block", i + 1));
            }
        }
        items.push(Item::Fence(Fence {
            info: info.to_string(),
            marker,
            body,
            line: i + 1,
        }));
    }
    if let Some((m, at)) = pending {
        return Err(format!("line {at}: `{m}` precedes no block"));
    }
    Ok(items)
}

/// The steps of a page (its `sh` blocks not skipped, and the hand steps), or the problems of
/// its markup.
fn steps(markdown: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    for item in parse(markdown)? {
        let fence = match item {
            Item::Hand(cmd) => {
                steps.push(Step::Hand(cmd));
                continue;
            }
            Item::Fence(fence) => fence,
        };
        if fence.info != "sh" {
            continue;
        }
        match fence.marker.as_deref() {
            Some(m) if m.starts_with("skip") => {}
            Some(m) => steps.push(Step::Block {
                text: fence.body,
                exit: m["exit ".len()..].trim().parse().unwrap(),
                line: fence.line,
            }),
            None => steps.push(Step::Block {
                text: fence.body,
                exit: 0,
                line: fence.line,
            }),
        }
    }
    Ok(steps)
}

/// Every page: README.md and docs/*.md, relative to the repository root, sorted.
fn pages() -> Vec<String> {
    let mut pages = vec!["README.md".to_string()];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            pages.push(format!("docs/{name}"));
        }
    }
    pages.sort();
    pages
}

/// Runs a page's steps in one bash session from the repository root, `$WORK` a fresh temp
/// directory; the whole page within `PAGE_TIMEOUT_S` (its process group is killed after).
fn run_page(page: &Path) {
    const PAGE_TIMEOUT_S: u32 = 600;
    // What `make build` leaves, with what to run when it is missing.
    modelzoo_testkit::emulator_home();
    modelzoo_testkit::venv_python();
    for bin in [
        "modelzoo",
        "run_resnet",
        "run_gpt",
        "run_vit",
        "examples/dllogger_demo",
    ] {
        let path = root().join("target/release").join(bin);
        assert!(
            path.is_file(),
            "{} is missing: run `make build` first",
            path.display()
        );
    }
    let text = std::fs::read_to_string(page).unwrap();
    let steps = steps(&text).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
    let work = tempfile::tempdir().unwrap();
    // Each block runs in a subshell under `set -e` (a failing command ends the block, not the
    // session); what it exports and where it `cd`s carry over to the next steps, as in the
    // reader's shell, through these two files written when the subshell exits.
    let state = tempfile::tempdir().unwrap();
    let plain = |p: PathBuf| {
        let p = p.to_str().unwrap().to_string();
        assert!(
            p.chars()
                .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c)),
            "{p}"
        );
        p
    };
    let (env_file, pwd_file) = (
        plain(state.path().join("env")),
        plain(state.path().join("pwd")),
    );
    let keep = format!("trap 'export -p > {env_file}; pwd > {pwd_file}' EXIT");
    let restore = format!(
        "[ -f {env_file} ] && . {env_file}; [ -f {pwd_file} ] && cd \"$(cat {pwd_file})\"; rm -f {env_file} {pwd_file}"
    );
    let mut script = String::from("set -uo pipefail\n");
    for (n, step) in steps.iter().enumerate() {
        match step {
            Step::Hand(cmd) => {
                let quoted = shlex::try_quote(cmd).unwrap();
                script.push_str(&format!(
                    "( {keep}; set -e; {cmd} ) || {{ echo \"doc-test: hand step {n} failed: \"{quoted} >&2; exit 90; }}\n{restore}\n"
                ))
            }
            Step::Block { text, exit, line } => script.push_str(&format!(
                "echo '--- doc-test: block at line {line}' >&2\n( {keep}; set -e\n{text}) ; status=$?\n{restore}\n\
                 [ \"$status\" -eq {exit} ] || {{ echo \"doc-test: the block at line {line} ended with status $status, the page says {exit}\" >&2; exit 91; }}\n"
            )),
        }
    }
    let out = Command::new("timeout")
        .args(["--kill-after=10", &PAGE_TIMEOUT_S.to_string(), "bash", "-c"])
        .arg(&script)
        .current_dir(root())
        .env("WORK", work.path())
        .env("TORCH_SDAA_BANNER", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}:\n--- stdout\n{}\n--- stderr\n{}",
        page.display(),
        if out.status.code() == Some(124) {
            format!(" did not finish within {PAGE_TIMEOUT_S} s")
        } else {
            String::new()
        },
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_markup_conventions_are_read_as_documented() {
    let page = "intro\n<!-- doc-test: skip (needs a card) -->\n```sh\nrun_on_card\n```\n\
                ```sh\necho one\n```\n<!-- doc-test: exit 1 -->\n```sh\nfalse\n```\n\
                <!-- doc-test: run touch x -->\n```text\noutput\n```\n";
    assert_eq!(
        steps(page).unwrap(),
        vec![
            Step::Block {
                text: "echo one\n".into(),
                exit: 0,
                line: 6
            },
            Step::Block {
                text: "false\n".into(),
                exit: 1,
                line: 10
            },
            Step::Hand("touch x".into()),
        ]
    );
    for (bad, why) in [
        ("```\nuntagged\n```\n", "without a language"),
        ("```bash\nls\n```\n", "tag commands `sh`"),
        ("```console\n$ ls\n```\n", "tag commands `sh`"),
        ("<!-- doc-test: skip -->\n```sh\nls\n```\n", "say why"),
        ("<!-- doc-test: skip () -->\n```sh\nls\n```\n", "say why"),
        (
            "<!-- doc-test: exit 1 -->\n```text\nout\n```\n",
            "marks a `text` block",
        ),
        (
            "<!-- doc-test: exit one -->\n```sh\nls\n```\n",
            "not an exit status",
        ),
        ("<!-- doc-test: exit 1 -->\n", "precedes no block"),
        (
            "<!-- doc-test: exit 1 -->\n<!-- doc-test: exit 2 -->\n```sh\nls\n```\n",
            "precedes another marker",
        ),
        (
            "<!-- doc-test: later -->\n```sh\nls\n```\n",
            "unknown marker",
        ),
        ("```sh\nls\n", "never closed"),
    ] {
        let err = steps(bad).expect_err(bad);
        assert!(err.contains(why), "{bad:?}: {err}");
    }
}

/// Every page follows the conventions, and every page with commands to run has its test here.
#[test]
fn every_page_follows_the_conventions_and_its_commands_are_run() {
    let this_file = include_str!("docs.rs");
    let mut problems = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(root().join(&page)).unwrap();
        // A skipped block is still a promise: the scripts it names exist.
        for fence in parse(&text).into_iter().flatten().filter_map(|i| match i {
            Item::Fence(f) if f.info == "sh" => Some(f),
            _ => None,
        }) {
            for script in fence
                .body
                .split(|c: char| c.is_whitespace() || "\"'`;()|&".contains(c))
                .filter(|t| t.starts_with("scripts/"))
            {
                if !root().join(script).exists() {
                    problems.push(format!(
                        "{page}:{}: the block names {script}, which does not exist",
                        fence.line
                    ));
                }
            }
        }
        match steps(&text) {
            Err(e) => problems.push(format!("{page}: {e}")),
            Ok(steps) => {
                let runs = steps.iter().any(|s| matches!(s, Step::Block { .. }));
                let test = format!("run_page(&root().join(\"{page}\"))");
                if runs && !this_file.contains(&test) {
                    problems.push(format!(
                        "{page}: it has commands to run and no test runs them: add a #[test] \
                         calling `{test}` to modelzoo/cli/tests/docs.rs"
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// README.md's first two commands are `make demo` and `make test`, the ones CI runs itself.
#[test]
fn the_readme_starts_with_make_demo_and_make_test() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let items = parse(&text).unwrap();
    let first = items
        .iter()
        .find_map(|i| match i {
            Item::Fence(f) if f.info == "sh" => Some(f),
            _ => None,
        })
        .expect("a sh block in README.md");
    let commands: Vec<&str> = first
        .body
        .lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(commands, ["make demo", "make test"], "{first:?}");
    assert!(
        first
            .marker
            .as_deref()
            .is_some_and(|m| m.starts_with("skip")),
        "README.md's make commands are marked skip: {first:?}"
    );
}

/// docs/port.md: from a CUDA project to a passing `modelzoo ci --device sdaa`, every command.
#[test]
fn port_md_runs_from_a_cuda_project_to_a_passing_pr_check() {
    run_page(&root().join("docs/port.md"));
}

/// docs/bisect.md: a baseline and a bisect with nothing to bisect (the costly searches run in
/// port_cmd.rs and diff_run_resnet.rs, which check the sets found).
#[test]
fn bisect_md_runs_a_bisect_with_nothing_to_bisect() {
    run_page(&root().join("docs/bisect.md"));
}

/// docs/bench.md: CPU cases, a test_conf, and the dry run of an A100 case.
#[test]
fn bench_md_runs_cpu_cases_and_a_dry_run() {
    run_page(&root().join("docs/bench.md"));
}

/// docs/ci.md: the zoo's PR check on the CPU and on the emulator.
#[test]
fn ci_md_runs_the_pr_check_on_cpu_and_the_emulator() {
    run_page(&root().join("docs/ci.md"));
}

/// docs/compare.md: a CPU baseline against an emulator run, with a noise run; a run that
/// stopped early fails.
#[test]
fn compare_md_compares_a_cpu_and_an_emulator_run() {
    run_page(&root().join("docs/compare.md"));
}

/// docs/ddp.md: two workers on the CPU and on the emulator, --print_cmd, torchrun.
#[test]
fn ddp_md_trains_with_two_workers() {
    run_page(&root().join("docs/ddp.md"));
}

/// docs/diff.md: one step dumped on the CPU, the emulator and in fp64, diffed; the perturbed
/// emulator's op is named.
#[test]
fn diff_md_dumps_and_diffs_a_step() {
    run_page(&root().join("docs/diff.md"));
}

/// docs/dllogger.md: the dllogger_demo example.
#[test]
fn dllogger_md_runs_its_example() {
    run_page(&root().join("docs/dllogger.md"));
}

/// docs/env.md: the banner with and without the emulator, and --device sdaa.
#[test]
fn env_md_prints_the_environment() {
    run_page(&root().join("docs/env.md"));
}

/// docs/migrate.md: a dry run, --write, and the run again on the output.
#[test]
fn migrate_md_ports_the_test_model() {
    run_page(&root().join("docs/migrate.md"));
}

/// docs/new.md: a scaffold, its validation, and its training on the emulator.
#[test]
fn new_md_scaffolds_a_model_that_trains() {
    run_page(&root().join("docs/new.md"));
}

/// docs/op.md: `op check` of an example op on the emulator, a layout bug caught, its repro.
#[test]
fn op_md_checks_an_op_on_the_emulator() {
    run_page(&root().join("docs/op.md"));
}

/// docs/python_logger.md: the example script on the CPU and the emulator, compared.
#[test]
fn python_logger_md_logs_and_compares() {
    run_page(&root().join("docs/python_logger.md"));
}

/// docs/run_gpt.md: training the tiny config and generating on the CPU and the emulator.
#[test]
fn run_gpt_md_trains_and_generates() {
    run_page(&root().join("docs/run_gpt.md"));
}

/// docs/run_bert.md: bert_tiny pretraining, classification fine-tuning from it, SQuAD, the
/// emulator, a refused run.
#[test]
fn run_bert_md_pretrains_and_fine_tunes() {
    run_page(&root().join("docs/run_bert.md"));
}

/// docs/run_resnet.md: synthetic images, then a folder of generated JPEG files.
#[test]
fn run_resnet_md_trains_on_synthetic_and_jpeg_images() {
    run_page(&root().join("docs/run_resnet.md"));
}

/// docs/validate.md: the zoo's models clean, a directory with review findings.
#[test]
fn validate_md_reviews_a_model_directory() {
    run_page(&root().join("docs/validate.md"));
}

/// docs/run_vit.md: vit_tiny with autocast on the emulator.
#[test]
fn run_vit_md_trains_on_the_emulator() {
    run_page(&root().join("docs/run_vit.md"));
}

/// docs/torch_sdaa.md: the import banner, a refused call, the op inventory.
#[test]
fn torch_sdaa_md_imports_and_counts_ops() {
    run_page(&root().join("docs/torch_sdaa.md"));
}
