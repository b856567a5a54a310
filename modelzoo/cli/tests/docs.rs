//! Docs that run: the shell blocks of the user docs are commands people paste, so the walkthrough
//! pages are executed here, block by block in one shell, from the repository root (after
//! `make build`, as the docs say), writing only under a temporary `$WORK`.
//!
//! Conventions in the Markdown (invisible when rendered):
//! - a fenced block tagged `sh` is a command block; `text`, `yaml`, `python`, ... are not run;
//! - `<!-- doc-test: skip (why) -->` before a block: not run here (it needs a card, a GPU, a
//!   dataset, the network, or is `make` itself), with the reason;
//! - `<!-- doc-test: exit N -->` before a block: the block is expected to end with status N;
//! - `<!-- doc-test: run COMMAND -->`: a step the reader does by hand (writing a README), done
//!   here by COMMAND at that point.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    modelzoo_testkit::workspace_root()
}

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

/// The steps of a page, or the problems of its markup (an untagged block, a marker that
/// precedes nothing).
fn steps(markdown: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    let mut pending: Option<String> = None;
    let mut lines = markdown.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let trimmed = line.trim();
        if let Some(marker) = trimmed
            .strip_prefix("<!-- doc-test:")
            .and_then(|m| m.strip_suffix("-->"))
        {
            let marker = marker.trim();
            if let Some(cmd) = marker.strip_prefix("run ") {
                steps.push(Step::Hand(cmd.to_string()));
            } else {
                pending = Some(marker.to_string());
            }
            continue;
        }
        let Some(info) = trimmed.strip_prefix("```") else {
            continue;
        };
        if info.is_empty() {
            return Err(format!(
                "line {}: a code block without a language (`sh` for commands, `text` for output)",
                i + 1
            ));
        }
        let mut body = String::new();
        for (_, l) in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                break;
            }
            body.push_str(l);
            body.push('\n');
        }
        let marker = pending.take();
        if info != "sh" {
            if let Some(m) = marker {
                return Err(format!("line {}: `{m}` marks a `{info}` block", i + 1));
            }
            continue;
        }
        match marker.as_deref() {
            Some(m) if m.starts_with("skip") => {}
            Some(m) if m.starts_with("exit ") => steps.push(Step::Block {
                text: body,
                exit: m[5..].trim().parse().map_err(|_| format!("line {}: `{m}`", i + 1))?,
                line: i + 1,
            }),
            Some(m) => return Err(format!("line {}: unknown marker `{m}`", i + 1)),
            None => steps.push(Step::Block {
                text: body,
                exit: 0,
                line: i + 1,
            }),
        }
    }
    Ok(steps)
}

/// Runs a page's steps in one bash session from the repository root, `$WORK` a fresh temp
/// directory, the built binaries and the kit's Python first on PATH.
fn run_page(page: &Path) {
    let text = std::fs::read_to_string(page).unwrap();
    let steps = steps(&text).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
    let work = tempfile::tempdir().unwrap();
    let mut script = String::from("set -uo pipefail\n");
    for (n, step) in steps.iter().enumerate() {
        match step {
            Step::Hand(cmd) => script.push_str(&format!(
                "( set -e; {cmd} ) || {{ echo 'doc-test: hand step {n} failed: {cmd}' >&2; exit 90; }}\n"
            )),
            Step::Block { text, exit, line } => script.push_str(&format!(
                "echo '--- doc-test: block at line {line}' >&2\n( set -e\n{text}) ; status=$?\n\
                 [ \"$status\" -eq {exit} ] || {{ echo \"doc-test: the block at line {line} ended with status $status, the page says {exit}\" >&2; exit 91; }}\n"
            )),
        }
    }
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(root())
        .env("WORK", work.path())
        .env("TORCH_SDAA_BANNER", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}:\n--- stdout\n{}\n--- stderr\n{}",
        page.display(),
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
    assert!(steps("```\nuntagged\n```\n").is_err());
}

/// docs/port.md: from a CUDA project to a passing `modelzoo ci --device sdaa`, every command.
#[test]
fn port_md_runs_from_a_cuda_project_to_a_passing_pr_check() {
    run_page(&root().join("docs/port.md"));
}
