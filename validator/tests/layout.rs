//! The layout rules on model directories these tests build: a correct one of each kind passes,
//! and each rule fires on the fault it describes.

use std::fs;
use std::path::{Path, PathBuf};

use validator::layout::{self, DirReport, Options, Validator, RULES};

const README_ZH: &str = "# Demo\n## 1. 模型概述\nx\n## 2. 快速开始\n### 2.1 准备数据集\nx\n### 2.2 构建环境\n```\n# docker build\n```\n### 2.3 启动训练\nx\n### 2.4 训练结果\n| a | b |\n";
const README_EN: &str = "# Demo\n## Introduction\n## Dataset preparation\n## Docker environment\n## Start training\n## Training results\n";
const RS_README: &str = "| arg | meaning |\n|model_name|m|\n|batch_size|b|\n|epoch|e|\n|step|s|\n|dataset_path|d|\n|lr|l|\n|device|d|\n|autocast|a|\n|nproc_per_node|n|\n";
const ARGUMENT_PY: &str = "import argparse\ndef parse():\n    p = argparse.ArgumentParser()\n    p.add_argument('--step', type=int, default=-1)\n    p.add_argument('--nproc_per_node', type=int, default=4)\n    return p.parse_args()\n";

fn write(path: &Path, text: impl AsRef<[u8]>) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A Python model directory in the Tecorigin ModelZoo layout that passes every rule.
fn python_model(dir: &Path, model: &str) {
    write(&dir.join("README.md"), README_ZH);
    write(
        &dir.join("requirements.txt"),
        "numpy\ntorchvision\ngit+https://gitee.com/xiwei777/tcap_dllogger.git\n",
    );
    write(
        &dir.join(format!("run_scripts/run_{model}.py")),
        "from argument import parse\n",
    );
    write(&dir.join("run_scripts/argument.py"), ARGUMENT_PY);
    write(
        &dir.join("run_scripts/formate_cmd.py"),
        "def fmt(c): return c\n",
    );
    write(&dir.join("run_scripts/README.md"), RS_README);
}

/// A Rust model crate in this repository's shape that passes every rule.
fn rust_crate(dir: &Path, model: &str) {
    write(
        &dir.join("Cargo.toml"),
        format!("[package]\nname = \"modelzoo-{model}\"\n\n[[bin]]\nname = \"run_{model}\"\npath = \"src/main.rs\"\n\n[dependencies]\n"),
    );
    write(&dir.join("src/main.rs"), "fn main() {}\n");
    write(
        &dir.join("spec.yaml"),
        "args:\n  - {name: depth, type: int, default: 18, help: Network depth.}\n",
    );
    write(
        &dir.join("README.md"),
        format!("{README_EN}\n## Arguments\n{RS_README}|nnode|n|\n|node_rank|r|\n"),
    );
}

fn check(dir: &Path) -> DirReport {
    Validator::new(&Options::default())
        .unwrap()
        .check_dir(dir)
        .unwrap()
}

fn rules(r: &DirReport) -> Vec<&'static str> {
    r.findings.iter().map(|f| f.rule).collect()
}

#[test]
fn correct_python_model_and_rust_crate_are_clean() {
    let t = tempfile::tempdir().unwrap();
    python_model(&t.path().join("Demo"), "demo");
    rust_crate(&t.path().join("resnet"), "resnet");
    for d in ["Demo", "resnet"] {
        let r = check(&t.path().join(d));
        assert!(r.findings.is_empty(), "{d}: {:?}", r.findings);
    }
    // English headings are accepted as well as Chinese ones.
    write(&t.path().join("Demo/README.md"), README_EN);
    assert!(check(&t.path().join("Demo")).findings.is_empty());
}

#[test]
fn missing_files_are_named() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("m");
    python_model(&d, "m");
    fs::remove_file(d.join("run_scripts/formate_cmd.py")).unwrap();
    fs::remove_file(d.join("requirements.txt")).unwrap();
    fs::remove_file(d.join("run_scripts/run_m.py")).unwrap();
    let r = check(&d);
    let text = layout::render_text(std::slice::from_ref(&r));
    assert!(
        text.contains("run_scripts/formate_cmd.py: layout.run-scripts: missing: formate_cmd.py"),
        "{text}"
    );
    assert!(
        text.contains("requirements.txt: layout.requirements: missing"),
        "{text}"
    );
    assert!(
        text.contains("run_<model>.py: layout.run-scripts: missing"),
        "{text}"
    );
    assert!(
        text.ends_with("checked 1 model directory: 0 clean, 1 with violations (3 violations)\n"),
        "{text}"
    );

    fs::remove_dir_all(d.join("run_scripts")).unwrap();
    fs::remove_file(d.join("README.md")).unwrap();
    assert_eq!(
        rules(&check(&d)),
        vec!["layout.readme", "layout.requirements", "layout.run-scripts"]
    );
}

#[test]
fn readme_sections_say_which_is_missing() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("m");
    python_model(&d, "m");
    // "训练结果" only inside a code fence does not count; no dataset heading at all.
    write(
        &d.join("README.md"),
        "## 模型介绍\n## Docker\n## 启动训练\n```\n## 训练结果\n```\n",
    );
    let r = check(&d);
    assert_eq!(rules(&r), vec!["readme.sections"]);
    let m = &r.findings[0].message;
    assert!(
        m.contains("dataset preparation") && m.contains("training results"),
        "{m}"
    );
    assert!(
        !m.contains("model introduction") && !m.contains("start training"),
        "{m}"
    );
}

#[test]
fn undocumented_arguments_and_missing_step() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("m");
    python_model(&d, "m");
    // DDP model (argument.py has nproc_per_node): its README must document it; multi-node too.
    write(
        &d.join("run_scripts/README.md"),
        RS_README
            .replace("|nproc_per_node|n|\n", "")
            .replace("|lr|l|\n", ""),
    );
    write(
        &d.join("run_scripts/argument.py"),
        ARGUMENT_PY.replace("'--step'", "'--max_step'") + "    p.add_argument('--node_rank')\n",
    );
    let r = check(&d);
    assert_eq!(
        rules(&r),
        vec!["args.step", "args.documented"],
        "{:?}",
        r.findings
    );
    let m = &r.findings[1].message;
    assert!(m.contains("lr, nproc_per_node, nnode, node_rank"), "{m}");
    assert!(r.findings[0].path.ends_with("run_scripts/argument.py"));
}

#[test]
fn framework_in_requirements_is_flagged_with_line() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("m");
    python_model(&d, "m");
    write(
        &d.join("requirements.txt"),
        "numpy\nTorch==2.0.1\npaddlepaddle\n",
    );
    let r = check(&d);
    assert_eq!(rules(&r), vec!["requirements.no-framework"; 2]);
    assert!(r.findings[0].message.starts_with("line 2: `Torch==2.0.1`"));
}

#[test]
fn non_utf8_readme_is_reported_and_still_checked() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("m");
    python_model(&d, "m");
    // GBK bytes of "模型" (the first pair happens to be valid UTF-8) in a README lacking sections.
    let mut bytes = b"## Introduction\n## ".to_vec();
    bytes.extend([0xc4, 0xa3, 0xd0, 0xcd]);
    bytes.extend(b"\n## Dataset\n");
    write(&d.join("README.md"), bytes);
    let r = check(&d);
    assert_eq!(rules(&r), vec!["readme.encoding", "readme.sections"]);
    assert!(
        r.findings[0].message.contains("offset 21, line 2"),
        "{}",
        r.findings[0].message
    );
}

#[test]
fn unreadable_files_are_findings_not_crashes() {
    // Tests run as root, where permission bits do not stop reads: a directory where a file
    // should be gives the same kind of I/O error (EISDIR) on read.
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("m");
    python_model(&d, "m");
    fs::remove_file(d.join("README.md")).unwrap();
    fs::create_dir(d.join("README.md")).unwrap();
    fs::remove_file(d.join("run_scripts/argument.py")).unwrap();
    fs::create_dir(d.join("run_scripts/argument.py")).unwrap();
    let r = check(&d);
    assert_eq!(
        rules(&r),
        vec!["fs.readable", "fs.readable", "args.step"],
        "{:?}",
        r.findings
    );
    assert!(r.findings[0].path.ends_with("m/README.md"));
}

#[test]
fn rust_crate_rules() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("gpt");
    rust_crate(&d, "gpt");
    write(
        &d.join("Cargo.toml"),
        "[package]\nname = \"gpt\"\n[[bin]]\nname = \"tool\"\n",
    );
    write(
        &d.join("spec.yaml"),
        "args:\n  - {name: batch_size, type: int, help: dup}\n",
    );
    let r = check(&d);
    assert_eq!(
        rules(&r),
        vec!["crate.run-binary", "crate.spec"],
        "{:?}",
        r.findings
    );
    assert!(
        r.findings[1]
            .message
            .contains("--batch_size is defined twice"),
        "{}",
        r.findings[1].message
    );

    // A binary cargo discovers in src/bin counts; a declared one whose source is absent does not.
    write(&d.join("src/bin/run_gpt.rs"), "fn main() {}\n");
    fs::remove_file(d.join("spec.yaml")).unwrap();
    assert_eq!(rules(&check(&d)), vec!["crate.spec"]);
    write(
        &d.join("Cargo.toml"),
        "[[bin]]\nname = \"run_gpt\"\npath = \"src/nope.rs\"\n",
    );
    write(&d.join("spec.yaml"), "args: []\n");
    fs::remove_file(d.join("src/bin/run_gpt.rs")).unwrap();
    assert_eq!(rules(&check(&d)), vec!["crate.run-binary"]);
}

const MODEL_YAML: &str = "models:\n  - name: demo\n    path: PyTorch/contrib/Classification/Demo\n    framework: pytorch\n    category: Classification\n    devices: [sdaa]\n    command: python run_scripts/run_demo.py --step 5\n    log: \"{output_dir}/out.log\"\n    metrics: [train.loss]\n    timeout: 60\n";

/// PyTorch/contrib/{Classification/Demo, Classification/Other, Face/FER/{inner}}, a model.yaml
/// listing Demo, a symlink loop, a hidden directory with a model inside.
fn zoo(root: &Path) -> PathBuf {
    let contrib = root.join("PyTorch/contrib");
    python_model(&contrib.join("Classification/Demo"), "demo");
    python_model(&contrib.join("Classification/Other"), "other");
    python_model(&contrib.join("Face/FER"), "fer");
    // A nested project inside a model directory is part of that model, not another one.
    python_model(&contrib.join("Face/FER/third_party/x"), "x");
    python_model(&contrib.join(".git/m"), "m");
    write(
        &root.join("PyTorch/model_config/model.yaml"),
        MODEL_YAML.replace("PyTorch/", ""),
    );
    std::os::unix::fs::symlink(&contrib, contrib.join("Face/loop")).unwrap();
    contrib
}

#[test]
fn all_finds_every_model_dir_reports_loops_and_model_yaml_entries() {
    let t = tempfile::tempdir().unwrap();
    let contrib = zoo(t.path());
    let mut v = Validator::new(&Options::default()).unwrap();
    let reports = v.check_tree(&contrib).unwrap();
    let dirs: Vec<String> = reports
        .iter()
        .map(|r| r.dir.strip_prefix(&contrib).unwrap().display().to_string())
        .collect();
    assert_eq!(
        dirs,
        vec![
            "Classification/Demo",
            "Classification/Other",
            "Face/FER",
            "Face/loop"
        ]
    );
    assert!(reports[0].findings.is_empty(), "{:?}", reports[0].findings);
    assert_eq!(rules(&reports[1]), vec!["model-yaml.entry"]);
    assert!(reports[1].findings[0]
        .path
        .ends_with("PyTorch/model_config/model.yaml"));
    assert_eq!(rules(&reports[3]), vec!["fs.readable"]);
    assert!(
        reports[3].findings[0].message.contains("symlink loop"),
        "{}",
        reports[3].findings[0].message
    );

    // A model.yaml given explicitly replaces the one found; an invalid one cannot be used.
    let given = t.path().join("given.yaml");
    write(
        &given,
        MODEL_YAML
            .replace("name: demo", "name: other")
            .replace("Demo", "Other"),
    );
    let mut v = Validator::new(&Options {
        model_yaml: Some(given.clone()),
    })
    .unwrap();
    // The given file's root is its own parent's parent, so only the name can match here.
    let r = v.check_dir(&contrib.join("Classification/Other")).unwrap();
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    // Another zoo's schema (unknown keys) still gives its names and paths.
    write(
        &given,
        "models:\n  - name: Other\n    gitee_link: x\n  - model: y\n",
    );
    let mut v = Validator::new(&Options {
        model_yaml: Some(given.clone()),
    })
    .unwrap();
    let r = v.check_dir(&contrib.join("Classification/Other")).unwrap();
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    let r = v.check_dir(&contrib.join("Classification/Demo")).unwrap();
    assert_eq!(rules(&r), vec!["model-yaml.entry"]);
    // Not YAML, or no entries at all: cannot be used.
    for text in ["models: [oops\n", "models:\n  - model: y\n"] {
        write(&given, text);
        let err = Validator::new(&Options {
            model_yaml: Some(given.clone()),
        })
        .err()
        .unwrap();
        assert!(err.to_string().contains("given.yaml"), "{err}");
    }
    // Nested past the YAML depth limit (issue #13): refused by the typed loader and by the
    // lenient fallback alike, before libyaml's quadratic scan, with the line and the limit.
    write(
        &given,
        format!("models: {}{}\n", "[".repeat(100_000), "]".repeat(100_000)),
    );
    let err = Validator::new(&Options {
        model_yaml: Some(given.clone()),
    })
    .err()
    .unwrap();
    assert!(
        err.to_string()
            .contains("given.yaml:1: collections nested more than 128 levels deep"),
        "{err}"
    );
}

#[test]
fn validate_never_writes() {
    let t = tempfile::tempdir().unwrap();
    let contrib = zoo(t.path());
    let snapshot = |root: &Path| -> Vec<(PathBuf, u64, Option<std::time::SystemTime>)> {
        let mut v: Vec<_> = walkdir::WalkDir::new(root)
            .into_iter()
            .filter_map(Result::ok)
            .map(|e| {
                let m = e.path().symlink_metadata().unwrap();
                (e.path().to_path_buf(), m.len(), m.modified().ok())
            })
            .collect();
        v.sort();
        v
    };
    let before = snapshot(t.path());
    let reports = Validator::new(&Options::default())
        .unwrap()
        .check_tree(&contrib)
        .unwrap();
    let _ = (
        layout::render_json(&reports),
        layout::render_junit(&reports),
    );
    assert_eq!(before, snapshot(t.path()));
}

#[test]
fn json_and_junit_outputs() {
    let t = tempfile::tempdir().unwrap();
    let contrib = zoo(t.path());
    let reports = Validator::new(&Options::default())
        .unwrap()
        .check_tree(&contrib)
        .unwrap();
    let json: serde_json::Value = serde_json::from_str(&layout::render_json(&reports)).unwrap();
    assert_eq!(json["summary"]["dirs"], 4);
    assert_eq!(json["summary"]["clean"], 1);
    assert_eq!(
        json["reports"][1]["findings"][0]["rule"],
        "model-yaml.entry"
    );
    let junit = layout::render_junit(&reports);
    assert!(
        junit.contains("<testsuite name=\"modelzoo validate\" tests=\"4\" failures=\"3\""),
        "{junit}"
    );
    assert_eq!(junit.matches("<testcase ").count(), 4);
    assert_eq!(
        junit.matches("<failure type=\"model-yaml.entry\"").count(),
        2
    );
    assert_eq!(junit.matches("<failure type=\"fs.readable\"").count(), 1);
}

#[test]
fn nonexistent_dir_is_an_error_not_a_finding() {
    let mut v = Validator::new(&Options::default()).unwrap();
    let err = v.check_dir(Path::new("/nonexistent/model")).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/model"), "{err}");
    assert!(v.check_tree(Path::new("/nonexistent")).is_err());
}

#[test]
fn rule_ids_are_unique() {
    let mut ids: Vec<&str> = RULES.iter().map(|r| r.id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), RULES.len());
}
