//! `modelzoo validate` as a user runs it: exit codes 0 / 1 / 2, the output formats, --all.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

fn modelzoo(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_modelzoo"))
        .args(args)
        .output()
        .expect("run modelzoo")
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn good_model(dir: &Path) {
    write(
        &dir.join("README.md"),
        "## 1. 模型概述\n## 2.1 准备数据集\n## 2.2 构建环境\n## 2.3 启动训练\n## 2.4 训练结果\n| 加速卡数量 | epoch | AMP | acc |\n|---|---|---|---|\n| 1 | 1 | yes | 0.9 |\n",
    );
    write(&dir.join("requirements.txt"), "numpy\n");
    write(&dir.join("run_scripts/run_demo.py"), "import argument\n");
    write(
        &dir.join("run_scripts/argument.py"),
        "p.add_argument('--step', type=int, default=-1)\n",
    );
    write(&dir.join("run_scripts/formate_cmd.py"), "\n");
    let mut args = String::from("| argument | meaning |\n|---|---|\n");
    for a in [
        "model_name",
        "batch_size",
        "epoch",
        "step",
        "dataset_path",
        "lr",
        "device",
        "autocast",
    ] {
        args.push_str(&format!("| `--{a}` | the {a} |\n"));
    }
    write(&dir.join("run_scripts/README.md"), &args);
}

#[test]
fn exit_codes_and_text_output() {
    let t = tempfile::tempdir().unwrap();
    let good = t.path().join("contrib/Classification/Demo");
    good_model(&good);
    let out = modelzoo(&["validate", good.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "checked 1 model directory: 1 clean, 0 with violations (0 violations)\n"
    );

    let bad = t.path().join("contrib/Face/Bad");
    good_model(&bad);
    write(&bad.join("requirements.txt"), "torch==2.0\n");
    let out = modelzoo(&[
        "validate",
        "--all",
        t.path().join("contrib").to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let first = stdout.lines().next().unwrap();
    assert_eq!(
        first,
        format!(
            "{}:1: requirements.no-framework: error: `torch==2.0` — remove it: the SDAA environment provides torch (a pip install would replace torch_sdaa's build)",
            bad.join("requirements.txt").display()
        )
    );
    assert!(
        stdout.ends_with("checked 2 model directories: 1 clean, 1 with violations (1 violation)\n"),
        "{stdout}"
    );

    // A path that cannot be read: exit 2, its cause said once.
    let missing = t.path().join("missing");
    for args in [
        vec!["validate", missing.to_str().unwrap()],
        vec!["validate", "--all", missing.to_str().unwrap()],
    ] {
        let out = modelzoo(&args);
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("error: ") && stderr.contains("missing: cannot read: "),
            "{stderr}"
        );
        assert_eq!(stderr.matches("(os error 2)").count(), 1, "{stderr}");
    }

    let out = modelzoo(&["validate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to check"));
}

#[test]
fn json_junit_and_rule_list() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("m");
    good_model(&dir);
    fs::remove_file(dir.join("run_scripts/formate_cmd.py")).unwrap();
    let d = dir.to_str().unwrap();

    let out = modelzoo(&["validate", "--format", "json", d]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(v["summary"]["violations"], 1);
    assert_eq!(v["reports"][0]["findings"][0]["rule"], "layout.run-scripts");

    let out = modelzoo(&["validate", "--format", "junit", d]);
    let xml = String::from_utf8_lossy(&out.stdout);
    assert!(xml.starts_with("<?xml"), "{xml}");
    assert!(
        xml.contains("<failure type=\"layout.run-scripts\""),
        "{xml}"
    );

    let out = modelzoo(&["validate", "--list-rules"]);
    assert_eq!(out.status.code(), Some(0));
    let list = String::from_utf8_lossy(&out.stdout);
    for id in [
        "layout.run-scripts",
        "readme.sections",
        "args.step",
        "model-yaml.entry",
    ] {
        assert!(
            list.lines().any(|l| l.starts_with(id)),
            "{id} not listed:\n{list}"
        );
    }

    // An unusable --model-yaml cannot run: exit 2, naming the file.
    let yaml = t.path().join("model.yaml");
    write(&yaml, "models: [oops\n");
    let out = modelzoo(&["validate", "--model-yaml", yaml.to_str().unwrap(), d]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("model.yaml"));
}

#[test]
fn a_fifo_readme_is_a_finding_and_validate_returns() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("m");
    good_model(&dir);
    fs::remove_file(dir.join("README.md")).unwrap();
    let ok = Command::new("mkfifo")
        .arg(dir.join("README.md"))
        .status()
        .expect("run mkfifo");
    assert!(ok.success());
    // Opening the FIFO would block forever: give the binary 30 s, then kill it and fail.
    let mut child = Command::new(env!("CARGO_BIN_EXE_modelzoo"))
        .args(["validate", dir.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run modelzoo");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("modelzoo validate hung on a FIFO README.md");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.starts_with(&format!(
            "{}: fs.readable: error: not a regular file (a FIFO): skipped, not read",
            dir.join("README.md").display()
        )),
        "{stdout}"
    );
}

/// The public ModelZoo's case file: `validate <zoo root>` checks it, each violation a finding
/// at `file:line`; `--list-rules` lists its rules; a FIFO case file is exit 2 naming it.
#[test]
fn a_zoo_root_checks_the_modelzoo_case_file() {
    let t = tempfile::tempdir().unwrap();
    good_model(&t.path().join("PyTorch/contrib/Classification/Demo"));
    let file = t.path().join("PyTorch/contrib/model_config/model.yaml");
    write(
        &file,
        "- case_name: octocat\n  desc:\n    run_dir: PyTorch/contrib/Classification/Demo\n    run_file: run_scripts/run_demo.py\n  params:\n    nnodes: 1\n    nproc_per_node: 0\n    batch_size: 8\n    model_name: demo\n    dataset_path: /data\n    step: 10\n    epoch: 1\n    lr:\n    device: sdaa\n    autocast: True\n",
    );
    let out = modelzoo(&["validate", t.path().to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let f = file.display();
    assert_eq!(
        stdout,
        format!(
            "{f}:7: zoo-case.params: error: case `octocat`: `nproc_per_node: 0` must be a positive integer (the number of cards per node)\n\
             {f}:13: zoo-case.required: error: case `octocat`: `params.lr` is empty; give it a value (the ModelZoo check refuses empty values)\n\
             checked 1 ModelZoo case file: 0 clean, 1 with violations (2 violations)\n"
        )
    );
    // The model directory is matched against the case file's run_dir.
    let out = modelzoo(&[
        "validate",
        t.path()
            .join("PyTorch/contrib/Classification/Demo")
            .to_str()
            .unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    let out = modelzoo(&["validate", "--list-rules"]);
    let list = String::from_utf8_lossy(&out.stdout);
    assert!(
        list.lines().any(|l| l.starts_with("zoo-case.run-dir")),
        "{list}"
    );

    fs::remove_file(&file).unwrap();
    assert!(Command::new("mkfifo")
        .arg(&file)
        .status()
        .unwrap()
        .success());
    let out = modelzoo(&["validate", t.path().to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("{f}: cannot read: not a regular file (a FIFO)")),
        "{stderr}"
    );
}

/// A model directory whose CUDA log is a copy of its SDAA run, quoted figures that the logs do
/// not give, and a README claiming one card for a four-process command.
fn reviewed_model(dir: &Path) {
    good_model(dir);
    let log = |values: &[f64]| -> String {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                format!("TCAPPDLL 2025-05-15 14:20:10.948668 - Epoch: 0 Iteration: {i}  rank : 0  train.loss : {v}  train.ips : 3.0 imgs/s\n")
            })
            .collect()
    };
    let values: Vec<f64> = (0..10).map(|i| 2.0 - 0.1 * i as f64).collect();
    let banner = " Torch-SDAA   | 2.1.1b0+gitebfa9da\n";
    write(
        &dir.join("run_scripts/sdaa.log"),
        &format!("{banner}{}", log(&values)),
    );
    write(
        &dir.join("run_scripts/cuda.log"),
        &format!("{banner}{}", log(&values)),
    );
    write(
        &dir.join("README.md"),
        "## 1. 模型概述\n## 2.1 准备数据集\n## 2.2 构建环境\n## 2.3 启动训练\n该模型支持单机单卡。\n```\npython run_demo.py --nproc_per_node 4\n```\n## 2.4 训练结果\n| 加速卡数量 | epoch | AMP | acc |\n|---|---|---|---|\n| 1 | 1 | yes | 0.9 |\n\nMeanRelativeError: 0.00042\nMeanAbsoluteError: 0.067\npass mean_relative_error=0.00042 <= 0.05 or mean_absolute_error=0.067 <= 0.0002\n",
    );
}

/// The review runs by default: each finding with its file:line and severity, in every format;
/// `--md` / `--html` write the reviewer's report (a picture per compared pair); info findings
/// alone exit 0; `--layout-only` runs the layout rules alone.
#[test]
fn the_review_its_severities_and_its_report() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("PyTorch/contrib/Classification/Demo");
    reviewed_model(&dir);
    let (md, html) = (t.path().join("review.md"), t.path().join("out/review.html"));
    fs::create_dir_all(html.parent().unwrap()).unwrap();
    let out = modelzoo(&[
        "validate",
        "--all",
        t.path().join("PyTorch").to_str().unwrap(),
        "--md",
        md.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let d = dir.display();
    for line in [
        format!("{d}/README.md:5: cards.claim: warning: says one card"),
        format!("{d}/run_scripts/cuda.log:1: logs.device: error: named as a CUDA log but it is an SDAA run"),
        format!("{d}/run_scripts/cuda.log: logs.identical: error: byte-identical to run_scripts/sdaa.log"),
        format!("{d}/README.md:14: results.figures: error: quotes MeanRelativeError 0.00042 (recomputed: 0)"),
    ] {
        assert!(stdout.lines().any(|l| l.starts_with(&line)), "{line}\n{stdout}");
    }
    assert!(
        stdout.ends_with("checked 1 model directory: 0 clean, 1 with violations (4 violations: 3 errors, 1 warning)\n"),
        "{stdout}"
    );
    let md = fs::read_to_string(&md).unwrap();
    assert!(
        md.contains("| error | `") && md.contains("README.md:14`"),
        "{md}"
    );
    assert_eq!(md.matches("data:image/svg+xml;base64,").count(), 1, "{md}");
    let html = fs::read_to_string(&html).unwrap();
    assert!(
        html.starts_with("<!DOCTYPE html>") && html.contains("<svg"),
        "{html}"
    );
    assert!(!html.contains("<script"), "self-contained, no scripts");

    // JSON and JUnit carry the severity.
    let out = modelzoo(&["validate", "--format", "json", dir.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = &v["reports"][0]["findings"];
    assert!(
        f.as_array()
            .unwrap()
            .iter()
            .all(|f| f["severity"].is_string()),
        "{v}"
    );
    assert_eq!(v["summary"]["errors"], 3);
    assert_eq!(v["reports"][0]["compared"][0]["kind"], "logs");
    let out = modelzoo(&["validate", "--format", "junit", dir.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("message=\"warning: says one card"));

    // The layout rules alone: the directory is in shape.
    let out = modelzoo(&["validate", "--layout-only", dir.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // Info findings alone are not violations: exit 0.
    fs::remove_file(dir.join("run_scripts/cuda.log")).unwrap();
    fs::remove_file(dir.join("run_scripts/sdaa.log")).unwrap();
    let readme = fs::read_to_string(dir.join("README.md")).unwrap();
    write(
        &dir.join("README.md"),
        &readme.replace("单机单卡", "单机四卡"),
    );
    let out = modelzoo(&["validate", dir.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(": results.unverifiable: info: "),
        "{stdout}"
    );
    assert!(
        stdout.ends_with(
            "checked 1 model directory: 1 clean, 0 with violations (0 violations; 1 info)\n"
        ),
        "{stdout}"
    );

    // A report that cannot be written: exit 2, naming it.
    let blocked = t.path().join("review.md/x.md");
    let out = modelzoo(&[
        "validate",
        dir.to_str().unwrap(),
        "--md",
        blocked.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot write the report"));

    // --list-rules shows each rule's severity, the review's included.
    let out = modelzoo(&["validate", "--list-rules"]);
    let list = String::from_utf8_lossy(&out.stdout);
    for (id, sev) in [
        ("imports.local", "error"),
        ("cards.claim", "warning"),
        ("results.unverifiable", "info"),
        ("zoo.near-duplicate", "warning"),
    ] {
        assert!(
            list.lines()
                .any(|l| l.starts_with(id) && l.split_whitespace().nth(1) == Some(sev)),
            "{id} {sev}:\n{list}"
        );
    }
}

/// Issue #38 A1: `--md` / `--html` never replace what is not a report — a FIFO, a directory,
/// a device node (a real one only where mknod works: as root, in a temp dir, never /dev) — nor
/// one of validate's own inputs, the README it reviews. Exit 2 naming the path; it is left as
/// it was.
#[test]
fn a_report_path_that_is_no_report_is_exit_2_and_left_alone() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("Demo");
    good_model(&dir);
    let readme = dir.join("README.md");
    let before = fs::read_to_string(&readme).unwrap();
    let fifo = t.path().join("pipe.md");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let sub = t.path().join("out.html");
    fs::create_dir(&sub).unwrap();
    let null = t.path().join("null");
    let device = Command::new("mknod")
        .arg(&null)
        .args(["c", "1", "3"])
        .output()
        .is_ok_and(|o| o.status.success());
    let d = dir.to_str().unwrap();
    let mut cases = vec![
        ("--md", fifo.clone(), "is a FIFO"),
        ("--html", sub.clone(), "is a directory"),
        ("--md", readme.clone(), "is one of this command's inputs"),
    ];
    if device {
        cases.push(("--md", null.clone(), "is a character device"));
    }
    for (flag, path, why) in cases {
        let out = modelzoo(&["validate", d, flag, path.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{flag} {}: {stderr}",
            path.display()
        );
        assert!(
            stderr.contains(&format!("{}: {why}", path.display())),
            "{stderr}"
        );
    }
    assert_eq!(fs::read_to_string(&readme).unwrap(), before);
    use std::os::unix::fs::FileTypeExt;
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(sub.is_dir());
    if device {
        assert!(fs::symlink_metadata(&null)
            .unwrap()
            .file_type()
            .is_char_device());
    }
    // Both reports to one path is refused too; a regular file is replaced.
    let report = t.path().join("review.md");
    let r = report.to_str().unwrap();
    let out = modelzoo(&["validate", d, "--md", r, "--html", r]);
    assert_eq!(out.status.code(), Some(2));
    fs::write(&report, "old").unwrap();
    let out = modelzoo(&["validate", d, "--md", r]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(fs::read_to_string(&report)
        .unwrap()
        .starts_with("# modelzoo validate"));
}

/// Issue #38 E13: a backtick in a file name cannot break its code span in `--md`, nor a `|`
/// the table.
#[test]
fn the_markdown_report_escapes_file_names() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("Demo");
    good_model(&dir);
    write(&dir.join("a`b|c.py"), "from datautils import X\n");
    let report = t.path().join("review.md");
    let out = modelzoo(&[
        "validate",
        dir.to_str().unwrap(),
        "--md",
        report.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let md = fs::read_to_string(&report).unwrap();
    let row = md
        .lines()
        .find(|l| l.starts_with("| error | ") && l.contains("imports.local"))
        .unwrap_or_else(|| panic!("{md}"));
    // `| error | ``…/a`b\|c.py:1`` | `imports.local` | … |`: four cells, the span whole.
    assert!(
        row.starts_with("| error | ``") && row.contains("a`b\\|c.py:1`` | `imports.local` | "),
        "{row}"
    );
    let cells = row.split(" | ").count();
    assert_eq!(cells, 4, "{row}");
}

/// Issue #38 F16 and E14 through `validate <zoo root>`: a case file that is not valid YAML is
/// reported with its line and column (it was skipped), and a run_dir linking out of the zoo is
/// a finding naming where it leads (it was clean).
#[test]
fn a_zoo_roots_case_file_that_does_not_parse_or_links_out_is_reported() {
    let t = tempfile::tempdir().unwrap();
    let zoo = t.path().join("zoo");
    let file = zoo.join("PyTorch/contrib/model_config/model.yaml");
    let case = "- case_name: octocat\n  desc:\n    run_dir: PyTorch/contrib/Classification/Demo\n    run_file: run_scripts/run_demo.py\n  params:\n    nnodes: 1\n    nproc_per_node: 1\n    batch_size: 8\n    model_name: demo\n    dataset_path: /data\n    step: 10\n    epoch: 1\n    lr: 0.1\n    device: sdaa\n    autocast: True\n";
    write(
        &file,
        &case.replace("nnodes: 1\n", "nnodes: 1\n    nnodes: 2\n"),
    );
    let out = modelzoo(&["validate", zoo.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.starts_with(&format!(
            "{}:6: zoo-case.format: error: not valid YAML (line 6, column 5): ",
            file.display()
        )) && stdout.contains("duplicate entry with key \"nnodes\""),
        "{stdout}"
    );
    let outside = t.path().join("outside");
    good_model(&outside);
    fs::create_dir_all(zoo.join("PyTorch/contrib/Classification")).unwrap();
    std::os::unix::fs::symlink(&outside, zoo.join("PyTorch/contrib/Classification/Demo")).unwrap();
    write(&file, case);
    let out = modelzoo(&["validate", zoo.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(":3: zoo-case.run-dir: error: case `octocat`: `run_dir: PyTorch/contrib/Classification/Demo` resolves to ")
            && stdout.contains("outside the zoo root"),
        "{stdout}"
    );
}
