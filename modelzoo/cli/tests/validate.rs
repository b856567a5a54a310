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
            "{}: requirements.no-framework: line 1: `torch==2.0` — remove it: the SDAA environment provides torch (a pip install would replace torch_sdaa's build)",
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
            "{}: fs.readable: not a regular file (a FIFO): skipped, not read",
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
            "{f}:7: zoo-case.params: case `octocat`: `nproc_per_node: 0` must be a positive integer (the number of cards per node)\n\
             {f}:13: zoo-case.required: case `octocat`: `params.lr` is empty; give it a value (the ModelZoo check refuses empty values)\n\
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
