//! `modelzoo ci` end to end: the real binary on a zoo the test creates (scaffolded model dirs,
//! a model.yaml running ci/tests/data/train.sh): table, JUnit, Markdown, exit codes.

use std::path::Path;
use std::process::Command;

use modelzoo_scaffold::{self as scaffold, Kind, NewModel};

fn modelzoo(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_modelzoo"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn zoo(root: &Path) {
    zoo_with(root, &[("good", "good", 60), ("diverged", "nan", 60)]);
}

fn zoo_with(root: &Path, models: &[(&str, &str, u64)]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ci/tests/data/train.sh");
    let mut yaml = String::from("models:\n");
    for (name, mode, timeout) in models {
        let plan = scaffold::plan(&NewModel {
            name: name.to_string(),
            kind: Kind::Python,
            category: "NLP".into(),
            root: root.to_path_buf(),
            dir: None,
            train_script: None,
        })
        .unwrap();
        scaffold::apply(&plan).unwrap();
        // `validate` reports a fresh scaffold's TODO placeholders: write them as an adapter would.
        for (path, text) in &plan.files {
            if path.extension().is_some_and(|e| e == "md") {
                std::fs::write(path, text.replace("TODO", "written")).unwrap();
            }
        }
        std::fs::copy(&script, plan.model_dir.join("train.sh")).unwrap();
        yaml.push_str(&format!(
            "  - name: {name}\n    path: NLP/{name}\n    framework: pytorch\n    category: NLP\n    devices: [cpu]\n    command: sh train.sh {mode} --step 4 --output_dir {{output_dir}}\n    log: \"{{output_dir}}/train.log\"\n    metrics: [train.loss, train.ips]\n    timeout: {timeout}\n"
        ));
    }
    std::fs::write(root.join("model_config/model.yaml"), yaml).unwrap();
}

#[test]
fn ci_reports_and_exit_codes() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    zoo(root);
    let yaml = root.join("model_config/model.yaml");
    let junit = root.join("ci.xml");
    let md = root.join("ci.md");
    let work = root.join("work");
    let (code, stdout, stderr) = modelzoo(&[
        "ci",
        "--model-yaml",
        yaml.to_str().unwrap(),
        "--device",
        "cpu",
        "--jobs",
        "2",
        "--junit",
        junit.to_str().unwrap(),
        "--md",
        md.to_str().unwrap(),
        "--work-dir",
        work.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stdout.starts_with("model     layout  run     log check"),
        "{stdout}"
    );
    assert!(stdout.contains("diverged log: "), "{stdout}");
    assert!(stdout.contains("train.loss = NaN"), "{stdout}");
    assert!(
        stdout.contains("2 models checked, 1 passed, 0 skipped, 1 failed"),
        "{stdout}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("tests=\"2\" failures=\"1\""), "{xml}");
    let summary = std::fs::read_to_string(&md).unwrap();
    assert!(
        summary.contains("| good | pass | pass | pass |"),
        "{summary}"
    );
    assert!(work.join("good/train.log").is_file());

    let (code, stdout, stderr) = modelzoo(&[
        "ci",
        "--model-yaml",
        yaml.to_str().unwrap(),
        "--models",
        "good",
        "--work-dir",
        work.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("1 models checked, 1 passed, 0 skipped, 0 failed"),
        "{stdout}"
    );

    let (code, _, stderr) = modelzoo(&[
        "ci",
        "--model-yaml",
        yaml.to_str().unwrap(),
        "--models",
        "nope",
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("unknown model `nope`"), "{stderr}");
    let (code, _, stderr) = modelzoo(&[
        "ci",
        "--model-yaml",
        root.join("missing.yaml").to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("missing.yaml"), "{stderr}");
}

/// A relative `--work-dir` names one place for the run, the clearing and the log check: run
/// twice, the second run starts from an empty output dir (the command refuses a used one, as
/// run_<model> refuses a directory holding checkpoints) and nothing lands in the model's dir.
#[test]
fn a_relative_work_dir_is_the_one_output_dir_and_is_cleared_between_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    zoo_with(root, &[("good", "good", 60)]);
    let yaml_path = root.join("model_config/model.yaml");
    let yaml = std::fs::read_to_string(&yaml_path).unwrap().replace(
        "command: sh train.sh",
        "command: test ! -e {output_dir}/used && touch {output_dir}/used && sh train.sh",
    );
    std::fs::write(&yaml_path, yaml).unwrap();
    for round in 1..=2 {
        let out = Command::new(env!("CARGO_BIN_EXE_modelzoo"))
            .args(["ci", "--model-yaml", "model_config/model.yaml"])
            .args(["--device", "cpu", "--work-dir", "work"])
            .current_dir(root)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0), "round {round}: {text}");
        assert!(text.contains("1 passed"), "round {round}: {text}");
    }
    assert!(root.join("work/good/used").is_file());
    assert!(root.join("work/good/train.log").is_file());
    assert!(
        !root.join("NLP/good/work").exists(),
        "the run wrote into the model's directory"
    );
}

#[test]
fn ctrl_c_kills_the_running_command_group_and_exits_130() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    zoo_with(root, &[("sleeper", "hang", 600), ("later", "good", 60)]);
    let work = root.join("work");
    let child = Command::new(env!("CARGO_BIN_EXE_modelzoo"))
        .args(["ci", "--model-yaml"])
        .arg(root.join("model_config/model.yaml"))
        .arg("--work-dir")
        .arg(&work)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pids_file = work.join("sleeper/pids");
    let started = std::time::Instant::now();
    while std::fs::read_to_string(&pids_file)
        .map(|t| t.lines().count())
        .unwrap_or(0)
        < 2
    {
        assert!(
            started.elapsed().as_secs() < 30,
            "the hanging command never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(130),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("sleeper run: interrupted (process group killed)"),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("later ") && l.split_whitespace().nth(2) == Some("skip")),
        "the next model is not started: {stdout}"
    );
    for pid in std::fs::read_to_string(&pids_file).unwrap().lines() {
        let pid: u32 = pid.trim().parse().unwrap();
        let mut gone = false;
        for _ in 0..100 {
            match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                Err(_) => gone = true,
                Ok(stat) => gone = stat.split_whitespace().nth(2) == Some("Z"),
            }
            if gone {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert!(gone, "process {pid} survived Ctrl-C");
    }
}

/// Issue #13, end to end: a skipped model is counted as skipped (table, JUnit, Markdown) and
/// does not fail the exit code; model.yaml mistakes that used to panic (a timeout past the
/// clock) or pass wrongly (a stale log outside `{output_dir}`, `--step` only in a comment)
/// are refused with exit 2, naming the file, line and what to do.
#[test]
fn skips_are_counted_apart_and_bad_entries_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    zoo_with(root, &[("good", "good", 60), ("sdaa_only", "good", 60)]);
    let yaml = root.join("model_config/model.yaml");
    let text = std::fs::read_to_string(&yaml).unwrap();
    let (head, tail) = text.split_at(text.find("  - name: sdaa_only").unwrap());
    std::fs::write(
        &yaml,
        format!(
            "{head}{}",
            tail.replace("devices: [cpu]", "devices: [sdaa]")
        ),
    )
    .unwrap();
    let (junit, md, work) = (root.join("ci.xml"), root.join("ci.md"), root.join("work"));
    let (code, stdout, stderr) = modelzoo(&[
        "ci",
        "--model-yaml",
        yaml.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
        "--md",
        md.to_str().unwrap(),
        "--work-dir",
        work.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("2 models checked, 1 passed, 1 skipped, 0 failed"),
        "{stdout}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("tests=\"2\" failures=\"0\" skipped=\"1\""),
        "{xml}"
    );
    let summary = std::fs::read_to_string(&md).unwrap();
    assert!(
        summary.contains("1 passed, 1 skipped, 0 failed.")
            && summary.contains("- sdaa\\_only: device \\`cpu\\` not in its devices (sdaa)"),
        "{summary}"
    );

    // A stale, good-looking log where a `log:` outside {output_dir} points.
    std::fs::write(
        root.join("NLP/good/train.log"),
        "TCAPPDLL 2025-05-15 14:20:10.930380 - Epoch: 0 Iteration: 0  rank : 0  train.loss : 0.5  train.ips : 10.0 imgs/s\n",
    )
    .unwrap();
    let good = text
        .split_at(text.find("  - name: sdaa_only").unwrap())
        .0
        .to_string();
    for (from, to, needle) in [
        (
            "timeout: 60",
            "timeout: 18446744073709551615",
            "`timeout: 18446744073709551615` is more than the limit of 86400 seconds",
        ),
        ("sh train.sh good", "sh train.sh nolog", ""),
        (
            // Quoted, so the `#` is the shell's comment, not YAML's.
            "command: sh train.sh good --step 4 --output_dir {output_dir}",
            "command: \"sh train.sh good --output_dir {output_dir} # --step 4\"",
            "must pass --step",
        ),
    ] {
        let mut entry = good.replace(from, to);
        let needle = if needle.is_empty() {
            // The command writes no log; the entry's log is the stale file.
            entry = entry.replace("\"{output_dir}/train.log\"", "train.log");
            "`log: train.log` must be a file inside {output_dir}"
        } else {
            needle
        };
        std::fs::write(&yaml, &entry).unwrap();
        let (code, stdout, stderr) = modelzoo(&[
            "ci",
            "--model-yaml",
            yaml.to_str().unwrap(),
            "--work-dir",
            work.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{to}: {stdout}{stderr}");
        assert!(
            stderr.contains("model.yaml:2: model `good`: "),
            "{to}: {stderr}"
        );
        assert!(stderr.contains(needle), "{to}: {stderr}");
        assert!(!stderr.contains("panicked"), "{to}: {stderr}");
    }
}

/// Issue #28 (injection), end to end: `--changed-since=--output=FILE` made git write FILE and
/// the check then exited 0 with "nothing to check". Now: exit 2 naming the revision, no FILE.
#[test]
fn changed_since_with_an_option_is_exit_2_and_git_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    zoo_with(root, &[("good", "good", 60)]);
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(root)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    };
    if !git(&["init", "-q"]) {
        eprintln!("git not available; skipping");
        return;
    }
    assert!(git(&["add", "."]) && git(&["commit", "-qm", "zoo"]));
    let planted = root.join("planted.txt");
    let yaml = root.join("model_config/model.yaml");
    let (code, stdout, stderr) = modelzoo(&[
        "ci",
        "--model-yaml",
        yaml.to_str().unwrap(),
        &format!("--changed-since=--output={}", planted.display()),
    ]);
    assert!(!planted.exists(), "git wrote {planted:?}: {stdout}{stderr}");
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("`--output={}`", planted.display())),
        "{stderr}"
    );
}

/// Issue #28: `--model-yaml` naming a FIFO blocked ci for ever; it is exit 2 naming it.
#[test]
fn a_fifo_model_yaml_is_exit_2_not_a_hang() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("model.yaml");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let mut child = Command::new(env!("CARGO_BIN_EXE_modelzoo"))
        .args(["ci", "--model-yaml"])
        .arg(&fifo)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("modelzoo ci hung on a FIFO model.yaml");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&fifo.display().to_string())
            && stderr.contains("not a regular file (a FIFO)"),
        "{stderr}"
    );
}

/// The public ModelZoo's case file, end to end: `modelzoo ci --model-yaml <it>` runs the case
/// with the kit's python on the emulator (default device sdaa), labelled so everywhere; a file
/// breaking its rules is exit 2 with every violation at file:line.
#[test]
fn a_modelzoo_case_file_runs_on_the_emulator_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let dir = root.join("PyTorch/contrib/Classification/Demo");
    std::fs::create_dir_all(dir.join("run_scripts")).unwrap();
    std::fs::write(
        dir.join("run_scripts/run_demo.py"),
        "import sys\nimport torch\nimport torch_sdaa\nfrom tcap_dllogger import Logger, StdOutBackend, Verbosity\n\
         args = dict(zip(sys.argv[1::2], sys.argv[2::2]))\nx = torch.ones(2, device=args['--device'])\n\
         log = Logger([StdOutBackend(Verbosity.DEFAULT)])\n\
         for i in range(int(args['--step'])):\n    log.log(step=(0, i), data={'rank': 0, 'train.loss': float(x.sum().item()) / (i + 1), 'train.ips': 5.0}, verbosity=Verbosity.DEFAULT)\n",
    )
    .unwrap();
    let file = root.join("PyTorch/contrib/model_config/model.yaml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let case = "- case_name: octocat\n  desc:\n    run_dir: PyTorch/contrib/Classification/Demo\n    run_file: run_scripts/run_demo.py\n  params:\n    nnodes: 1\n    nproc_per_node: 1\n    batch_size: 8\n    model_name: demo\n    dataset_path: /data/none\n    step: 2\n    epoch: 1\n    lr: 0.1\n    device: sdaa\n    autocast: False\n";
    std::fs::write(&file, case).unwrap();
    let (junit, md, work) = (root.join("ci.xml"), root.join("ci.md"), root.join("work"));
    let (code, stdout, stderr) = modelzoo(&[
        "ci",
        "--model-yaml",
        file.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
        "--md",
        md.to_str().unwrap(),
        "--work-dir",
        work.to_str().unwrap(),
        "--timeout",
        "300",
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stderr.contains("modelzoo ci: device sdaa (EMULATOR): runs on the SDAA EMULATOR"),
        "{stderr}"
    );
    assert!(
        stdout
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("octocat  n/a     pass    pass")
                && l.ends_with("sdaa (EMULATOR)")),
        "{stdout}"
    );
    assert!(
        stdout.contains("1 models checked, 1 passed, 0 skipped, 0 failed"),
        "{stdout}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(
            "<testsuite name=\"modelzoo-ci on sdaa (EMULATOR)\" tests=\"1\" failures=\"0\""
        ),
        "{xml}"
    );
    let summary = std::fs::read_to_string(&md).unwrap();
    assert!(
        summary.contains("| octocat | n/a | pass | pass |"),
        "{summary}"
    );
    assert!(summary.contains("not SDAA hardware results"), "{summary}");

    // --timeout is for case files only.
    zoo_with(root, &[("good", "good", 60)]);
    let (code, _, stderr) = modelzoo(&[
        "ci",
        "--model-yaml",
        root.join("model_config/model.yaml").to_str().unwrap(),
        "--timeout",
        "5",
    ]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--timeout applies to a ModelZoo case file"),
        "{stderr}"
    );

    // Broken rules: exit 2, nothing run, every violation at file:line.
    std::fs::write(
        &file,
        case.replace("nnodes: 1", "nnodes: 0")
            .replace("run_scripts/run_demo.py", "train.py"),
    )
    .unwrap();
    let (code, stdout, stderr) = modelzoo(&["ci", "--model-yaml", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    let f = file.display();
    assert!(
        stderr.contains("not a usable ModelZoo case file (2 problems"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{f}:4: zoo-case.run-file: case `octocat`: `run_file: train.py` must start with run_scripts/")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "{f}:6: zoo-case.params: case `octocat`: `nnodes: 0` must be a positive integer"
        )),
        "{stderr}"
    );
}

/// A check that checked nothing fails: every selected model skipped, or none selected.
#[test]
fn a_check_that_checked_nothing_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    zoo_with(root, &[("good", "good", 60)]);
    let yaml = root.join("model_config/model.yaml");
    let work = root.join("work");
    let (code, stdout, stderr) = modelzoo(&[
        "ci",
        "--model-yaml",
        yaml.to_str().unwrap(),
        "--device",
        "cuda",
        "--work-dir",
        work.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stdout.contains("1 models checked, 0 passed, 1 skipped, 0 failed\n")
            && stdout.ends_with(
                "modelzoo ci: nothing was checked: every selected model was skipped \
                 (good: device `cuda` not in its devices (cpu))\n"
            ),
        "{stdout}"
    );
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(root)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    };
    if !git(&["init", "-q"]) {
        eprintln!("git not available; skipping the --changed-since part");
        return;
    }
    std::fs::write(root.join(".gitignore"), "work/\n").unwrap();
    assert!(git(&["add", "."]) && git(&["commit", "-qm", "zoo"]));
    let (code, stdout, stderr) = modelzoo(&[
        "ci",
        "--model-yaml",
        yaml.to_str().unwrap(),
        "--changed-since",
        "HEAD",
    ]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert_eq!(
        stdout,
        "modelzoo ci: nothing was checked: no model was selected (no model directory has changes since `HEAD`)\n"
    );
}

/// Issue #28 (data loss), end to end: a --work-dir whose model directory holds the user's
/// files is refused with exit 2 before anything runs, and the files survive.
#[test]
fn a_work_dir_holding_user_files_is_exit_2_and_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    zoo_with(root, &[("good", "good", 60)]);
    // `--work-dir NLP` names the zoo's own category directory: NLP/good is the model's source.
    let (code, stdout, stderr) = modelzoo(&[
        "ci",
        "--model-yaml",
        root.join("model_config/model.yaml").to_str().unwrap(),
        "--work-dir",
        root.join("NLP").to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains("it holds files modelzoo ci did not create")
            && stderr.contains("give another --work-dir"),
        "{stderr}"
    );
    assert!(root.join("NLP/good/README.md").is_file());
    assert!(root.join("NLP/good/train.sh").is_file());
}

/// Issue #38 A1: `--junit` / `--md` are checked before anything runs — a FIFO, a directory,
/// the model.yaml itself, a model's README, the same path twice — exit 2 naming it, nothing
/// run and nothing touched.
#[test]
fn a_report_path_that_is_no_report_is_exit_2_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    zoo_with(root, &[("good", "good", 60)]);
    let yaml = root.join("model_config/model.yaml");
    let yaml_text = std::fs::read_to_string(&yaml).unwrap();
    let readme = root.join("NLP/good/README.md");
    let readme_text = std::fs::read_to_string(&readme).unwrap();
    let fifo = root.join("ci.md");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let dir = root.join("ci.xml");
    std::fs::create_dir(&dir).unwrap();
    let work = root.join("work");
    let other = root.join("r.xml");
    for (args, path, why) in [
        (vec!["--md", s(&fifo)], &fifo, "is a FIFO"),
        (vec!["--junit", s(&dir)], &dir, "is a directory"),
        (
            vec!["--md", s(&yaml)],
            &yaml,
            "is one of this command's inputs",
        ),
        (
            vec!["--junit", s(&readme)],
            &readme,
            "is one of this command's inputs",
        ),
        (
            vec!["--junit", s(&other), "--md", s(&other)],
            &other,
            "given for two reports (--junit and --md)",
        ),
    ] {
        let mut all = vec!["ci", "--model-yaml", s(&yaml), "--work-dir", s(&work)];
        all.extend(args);
        let (code, stdout, stderr) = modelzoo(&all);
        assert_eq!(code, 2, "{stdout}{stderr}");
        assert!(
            stderr.contains(&format!("{}: {why}", path.display())),
            "{stderr}"
        );
        assert!(!work.exists(), "ran before refusing: {stdout}");
    }
    assert_eq!(std::fs::read_to_string(&yaml).unwrap(), yaml_text);
    assert_eq!(std::fs::read_to_string(&readme).unwrap(), readme_text);
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    assert!(dir.is_dir());
}

/// Issue #38 E14 and F16 for a ModelZoo case file: a run_dir linking out of the zoo root is
/// refused (the case was run there), and a file that is not valid YAML says so with line and
/// column (it was `invalid type: sequence, expected struct RawFile`) — exit 2, nothing run.
#[test]
fn a_case_file_linking_out_of_the_zoo_or_not_yaml_is_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("zoo");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(outside.join("run_scripts")).unwrap();
    std::fs::write(outside.join("run_scripts/run_demo.py"), "print('ran')\n").unwrap();
    std::fs::create_dir_all(root.join("PyTorch/contrib/Classification")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("PyTorch/contrib/Classification/Demo")).unwrap();
    let file = root.join("PyTorch/contrib/model_config/model.yaml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let case = "- case_name: octocat\n  desc:\n    run_dir: PyTorch/contrib/Classification/Demo\n    run_file: run_scripts/run_demo.py\n  params:\n    nnodes: 1\n    nproc_per_node: 1\n    batch_size: 8\n    model_name: demo\n    dataset_path: /data\n    step: 10\n    epoch: 1\n    lr: 0.1\n    device: sdaa\n    autocast: True\n";
    std::fs::write(&file, case).unwrap();
    let work = tmp.path().join("work");
    let (code, stdout, stderr) =
        modelzoo(&["ci", "--model-yaml", s(&file), "--work-dir", s(&work)]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}:3: zoo-case.run-dir: case `octocat`",
            file.display()
        )) && stderr.contains("outside the zoo root"),
        "{stderr}"
    );
    assert!(!work.exists());
    std::fs::write(
        &file,
        case.replace("epoch: 1\n", "epoch: 99999999999999999999999\n"),
    )
    .unwrap();
    let (code, stdout, stderr) =
        modelzoo(&["ci", "--model-yaml", s(&file), "--work-dir", s(&work)]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains(": zoo-case.format: not valid YAML (line 12, column ")
            && !stderr.contains("RawFile"),
        "{stderr}"
    );
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `--runs` / `--baseline-device` that cannot be honoured are exit 2 before anything runs: a
/// case file (its cases run once, as the ModelZoo's check runs them), a baseline device that is
/// `--device` itself, `--runs 0`.
#[test]
fn runs_and_baseline_device_that_cannot_apply_are_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("zoo");
    std::fs::create_dir_all(root.join("PyTorch/contrib/Classification/Demo/run_scripts")).unwrap();
    std::fs::write(
        root.join("PyTorch/contrib/Classification/Demo/run_scripts/run_demo.py"),
        "print('ran')\n",
    )
    .unwrap();
    let file = root.join("PyTorch/contrib/model_config/model.yaml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "- case_name: octocat\n  desc:\n    run_dir: PyTorch/contrib/Classification/Demo\n    run_file: run_scripts/run_demo.py\n  params:\n    nnodes: 1\n    nproc_per_node: 1\n    batch_size: 8\n    model_name: demo\n    dataset_path: /data\n    step: 10\n    epoch: 1\n    lr: 0.1\n    device: sdaa\n    autocast: True\n").unwrap();
    let work = tmp.path().join("work");
    let (code, stdout, stderr) = modelzoo(&[
        "ci",
        "--model-yaml",
        s(&file),
        "--runs",
        "3",
        "--work-dir",
        s(&work),
    ]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stderr.contains("ModelZoo case file"), "{stderr}");
    zoo(tmp.path());
    let yaml = tmp.path().join("model_config/model.yaml");
    let (code, stdout, stderr) = modelzoo(&[
        "ci",
        "--model-yaml",
        s(&yaml),
        "--device",
        "cpu",
        "--baseline-device",
        "cpu",
        "--work-dir",
        s(&work),
    ]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stderr.contains("is --device itself"), "{stderr}");
    let (code, _, stderr) = modelzoo(&["ci", "--model-yaml", s(&yaml), "--runs", "0"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(!work.exists());
}
