//! The layout rules on model directories these tests build: a correct one of each kind passes,
//! and each rule fires on the fault it describes.

use std::fs;
use std::path::{Path, PathBuf};

use validator::layout::{self, DirReport, Options, Validator, RULES};

const README_ZH: &str = "# Demo\n## 1. 模型概述\nx\n## 2. 快速开始\n### 2.1 准备数据集\nx\n### 2.2 构建环境\n```\n# docker build\n```\n### 2.3 启动训练\nx\n### 2.4 训练结果\n| 加速卡数量 | epoch | AMP | acc |\n|---|---|---|---|\n| 1 | 1 | yes | 0.9 |\n";
const README_EN: &str = "# Demo\n## Introduction\n## Dataset preparation\n## Docker environment\n## Start training\n## Training results\n| cards | acc |\n|---|---|\n| 1 | 0.9 |\n";
const RS_README: &str = "| arg | meaning |\n|---|---|\n|model_name|m|\n|batch_size|b|\n|epoch|e|\n|step|s|\n|dataset_path|d|\n|lr|l|\n|device|d|\n|autocast|a|\n|nproc_per_node|n|\n";
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
        text.contains(
            "run_scripts/formate_cmd.py: layout.run-scripts: error: missing: formate_cmd.py"
        ),
        "{text}"
    );
    assert!(
        text.contains("requirements.txt: layout.requirements: error: missing"),
        "{text}"
    );
    assert!(
        text.contains("run_<model>.py: layout.run-scripts: error: missing"),
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
    assert_eq!(r.findings[0].line, Some(2));
    assert!(r.findings[0].message.starts_with("`Torch==2.0.1`"));
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
    // Named as the index names it (relative to its root), not by the reviewer's absolute path.
    let message = &reports[1].findings[0].message;
    assert!(
        message.contains("(contrib/Classification/Other)")
            && !message.contains(&t.path().display().to_string()),
        "{message}"
    );
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

/// `modelzoo new`'s scaffold of each kind, written by the real scaffolder under `root`.
fn scaffold(root: &Path, name: &str, kind: modelzoo_scaffold::Kind) -> PathBuf {
    use modelzoo_scaffold::{apply, plan, NewModel};
    let plan = plan(&NewModel {
        name: name.into(),
        kind,
        category: "Classification".into(),
        root: root.to_path_buf(),
        dir: None,
        train_script: None,
    })
    .unwrap();
    apply(&plan).unwrap();
    plan.model_dir
}

#[test]
fn a_fresh_scaffold_is_reported_until_its_placeholders_are_filled() {
    use modelzoo_scaffold::Kind;
    let t = tempfile::tempdir().unwrap();
    let py = scaffold(t.path(), "vit", Kind::Python);
    let rs = scaffold(t.path(), "unet", Kind::Rust);

    let r = check(&py);
    assert_eq!(
        rules(&r),
        vec!["readme.placeholders", "readme.placeholders"],
        "{:?}",
        r.findings
    );
    assert!(r.findings[0].path.ends_with("vit/README.md"));
    assert!(r.findings[1].path.ends_with("run_scripts/README.md"));
    // Every TODO line is named; the scaffold's own HTML comment ("Replace every "TODO"") is not.
    let readme = fs::read_to_string(py.join("README.md")).unwrap();
    let todo_lines: Vec<String> = readme
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("TODO") && !l.contains("Replace every"))
        .map(|(i, _)| (i + 1).to_string())
        .collect();
    assert!(todo_lines.len() >= 5, "{todo_lines:?}");
    let m = &r.findings[0].message;
    assert!(
        m.contains(&format!(
            "placeholder TODO on lines {}",
            todo_lines.join(", ")
        )),
        "{m}"
    );
    let r = check(&rs);
    assert_eq!(rules(&r), vec!["readme.placeholders"], "{:?}", r.findings);

    // Once an adapter has written the content, the same directories are clean: the scaffold is
    // otherwise in ModelZoo shape (sections, results table, every argument documented).
    for readme in [
        py.join("README.md"),
        py.join("run_scripts/README.md"),
        rs.join("README.md"),
    ] {
        let text = fs::read_to_string(&readme).unwrap();
        write(&readme, text.replace("TODO", "written"));
    }
    for d in [&py, &rs] {
        let r = check(d);
        assert!(r.findings.is_empty(), "{}: {:?}", d.display(), r.findings);
    }
}

#[test]
fn results_section_must_hold_a_table() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("m");
    python_model(&d, "m");
    let head = README_ZH.split("### 2.4 训练结果").next().unwrap();
    // Prose only; a table elsewhere (dataset section) does not count; nor does a header with
    // no row, nor pipes without a delimiter row.
    for results in [
        "精度达到 76.1%，与 CUDA 对齐。\n",
        "x\n",
        "| cards | acc |\n|---|---|\n",
        "| cards | acc |\n| 1 | 0.9 |\n",
        "```\n| cards | acc |\n|---|---|\n| 1 | 0.9 |\n```\n",
    ] {
        let text = head.replace(
            "### 2.1 准备数据集\nx\n",
            "### 2.1 准备数据集\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        ) + "### 2.4 训练结果\n"
            + results
            + "## 3. FAQ\n| q | a |\n|---|---|\n| 1 | 2 |\n";
        write(&d.join("README.md"), &text);
        let r = check(&d);
        assert_eq!(rules(&r), vec!["readme.results-table"], "{results:?}");
        let line = text.lines().position(|l| l == "### 2.4 训练结果").unwrap() + 1;
        assert!(
            r.findings[0]
                .message
                .contains(&format!("(line {line}: `### 2.4 训练结果`) has no table")),
            "{}",
            r.findings[0].message
        );
    }
    // A table in a subsection of the results section counts.
    write(
        &d.join("README.md"),
        head.to_string() + "### 2.4 训练结果\n#### 精度\n| cards | acc |\n|---|---|\n| 1 | 0.9 |\n",
    );
    assert!(check(&d).findings.is_empty());
}

#[test]
fn arguments_are_documented_by_entries_not_words_in_prose() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("m");
    python_model(&d, "m");
    // `step` only as a word in prose, `lr` only inside other arguments' names.
    let rs = RS_README
        .replace("|step|s|\n", "")
        .replace("|lr|l|\n", "|auto-scale-lr|x|\n")
        .replace(
            "|batch_size|b|\n",
            "|batch_size|每个训练 step 的样本数量|\n",
        )
        + "\n开启 --auto-scale-lr 时按 batch_size 缩放 lr；--lr-decay 见下。\n";
    write(&d.join("run_scripts/README.md"), &rs);
    let r = check(&d);
    assert_eq!(rules(&r), vec!["args.documented"], "{:?}", r.findings);
    assert!(
        r.findings[0]
            .message
            .starts_with("arguments not documented: step, lr —"),
        "{}",
        r.findings[0].message
    );
    // A `--name` token in prose or an example, or a row with dashes and backticks, documents.
    write(
        &d.join("run_scripts/README.md"),
        rs + "| `--lr`, `-l` | 0.1 | 学习率 |\n\n```\npython run_m.py --step 10\n```\n",
    );
    let r = check(&d);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
}

#[test]
fn a_fifo_readme_is_skipped_with_a_finding_not_a_hang() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("m");
    python_model(&d, "m");
    for f in ["README.md", "run_scripts/README.md"] {
        fs::remove_file(d.join(f)).unwrap();
        let ok = std::process::Command::new("mkfifo")
            .arg(d.join(f))
            .status()
            .expect("run mkfifo");
        assert!(ok.success());
    }
    // Opening a FIFO for reading blocks until a writer comes: run the check on a thread so a
    // regression fails here instead of hanging the suite.
    let (tx, rx) = std::sync::mpsc::channel();
    let dir = d.clone();
    std::thread::spawn(move || tx.send(check(&dir)).unwrap());
    let r = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("validate hung on a FIFO");
    assert_eq!(
        rules(&r),
        vec!["fs.readable", "fs.readable"],
        "{:?}",
        r.findings
    );
    assert!(r.findings[0].path.ends_with("m/README.md"));
    for f in &r.findings {
        assert!(
            f.message
                .starts_with("not a regular file (a FIFO): skipped, not read"),
            "{}",
            f.message
        );
    }
}

#[test]
fn an_io_error_names_its_cause_once() {
    let mut v = Validator::new(&Options::default()).unwrap();
    for err in [
        v.check_dir(Path::new("/nonexistent/model")).unwrap_err(),
        v.check_tree(Path::new("/nonexistent")).unwrap_err(),
    ] {
        // What `error: {err:#}` prints: the message, then each source.
        let mut chain = err.to_string();
        let mut source = std::error::Error::source(&err);
        while let Some(s) = source {
            chain.push_str(&format!(": {s}"));
            source = s.source();
        }
        assert_eq!(chain.matches("(os error 2)").count(), 1, "{chain}");
        assert!(chain.contains("cannot read: "), "{chain}");
    }
}

#[test]
fn this_repositorys_model_crates_are_clean() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut v = Validator::new(&Options {
        model_yaml: Some(repo.join("model_config/model.yaml")),
    })
    .unwrap()
    .with_review(true);
    for model in [
        "modelzoo/resnet",
        "modelzoo/vit",
        "modelzoo/gpt",
        "modelzoo/llama",
        "modelzoo/bert",
        "modelzoo/pytorch/Classification/ResNet20",
    ] {
        let r = v.check_dir(&repo.join(model)).unwrap();
        assert!(r.findings.is_empty(), "{model}: {:?}", r.findings);
    }
}

fn mkfifo(path: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(ok.success());
}

/// Issue #28: an auto-found `model_config/model.yaml` that is a FIFO was silently not applied
/// (the model got no `model-yaml.entry` check at all). It is a finding naming it, never a hang;
/// given with `--model-yaml` it is an error naming it.
#[test]
fn a_fifo_model_yaml_is_named_never_skipped_nor_a_hang() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("Classification/m");
    python_model(&d, "m");
    fs::create_dir_all(t.path().join("model_config")).unwrap();
    let yaml = t.path().join("model_config/model.yaml");
    mkfifo(&yaml);
    let (tx, rx) = std::sync::mpsc::channel();
    let dir = d.clone();
    std::thread::spawn(move || tx.send(check(&dir)).unwrap());
    let r = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("validate hung on a FIFO model.yaml");
    assert_eq!(rules(&r), vec!["model-yaml.entry"], "{:?}", r.findings);
    assert!(r.findings[0].path.ends_with("model_config/model.yaml"));
    assert!(
        r.findings[0]
            .message
            .contains("not a regular file (a FIFO)"),
        "{}",
        r.findings[0].message
    );

    let (tx, rx) = std::sync::mpsc::channel();
    let given = yaml.clone();
    std::thread::spawn(move || {
        let r = Validator::new(&Options {
            model_yaml: Some(given),
        });
        tx.send(r.err().map(|e| e.to_string())).unwrap()
    });
    let err = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("validate hung on a FIFO --model-yaml")
        .expect("a FIFO --model-yaml is an error");
    assert!(
        err.contains(&yaml.display().to_string()) && err.contains("not a regular file (a FIFO)"),
        "{err}"
    );
}

/// A ModelZoo checkout: `PyTorch/contrib/Classification/<model>` directories and the case
/// file `PyTorch/contrib/model_config/model.yaml` listing `listed` (a case per model).
fn modelzoo_checkout(root: &Path, models: &[&str], listed: &[&str]) -> PathBuf {
    for m in models {
        python_model(&root.join(format!("PyTorch/contrib/Classification/{m}")), m);
    }
    let mut text = String::new();
    for m in listed {
        text.push_str(&format!(
            "- case_name: user_{m}\n  desc:\n    run_dir: PyTorch/contrib/Classification/{m}\n    run_file: run_scripts/run_{m}.py\n  params:\n    nnodes: 1\n    nproc_per_node: 1\n    batch_size: 8\n    model_name: {m}\n    dataset_path: /data/{m}\n    step: 10\n    epoch: 1\n    lr: 0.1\n    device: sdaa\n    autocast: True\n"
        ));
    }
    let file = root.join("PyTorch/contrib/model_config/model.yaml");
    write(&file, text);
    file
}

/// `validate` on a zoo root (or the case file itself) checks the ModelZoo case file: each
/// violation a finding with its line; the model directories are matched against its cases.
#[test]
fn the_modelzoo_case_file_is_checked_with_lines_and_used_as_the_index() {
    let t = tempfile::tempdir().unwrap();
    let file = modelzoo_checkout(t.path(), &["demo", "unlisted"], &["demo"]);
    let mut v = Validator::new(&Options::default()).unwrap();
    let clean = v.check_path(t.path()).unwrap();
    assert_eq!(clean.kind, layout::ModelKind::ZooCases);
    assert!(clean.findings.is_empty(), "{:?}", clean.findings);
    // The index: `demo` has a case (by its run_dir), `unlisted` has none.
    let demo = v
        .check_dir(&t.path().join("PyTorch/contrib/Classification/demo"))
        .unwrap();
    assert!(demo.findings.is_empty(), "{:?}", demo.findings);
    let unlisted = v
        .check_dir(&t.path().join("PyTorch/contrib/Classification/unlisted"))
        .unwrap();
    assert_eq!(rules(&unlisted), vec!["model-yaml.entry"]);

    // Break two rules: both reported, each at its line, in `path:line: rule: message` text.
    let text = fs::read_to_string(&file)
        .unwrap()
        .replace("nproc_per_node: 1", "nproc_per_node: 0")
        .replace("    lr: 0.1\n", "");
    write(&file, &text);
    let report = Validator::new(&Options::default())
        .unwrap()
        .check_path(&file)
        .unwrap();
    let lines: Vec<(Option<usize>, &str)> =
        report.findings.iter().map(|f| (f.line, f.rule)).collect();
    assert_eq!(
        lines,
        vec![(Some(5), "zoo-case.required"), (Some(7), "zoo-case.params")]
    );
    let out = layout::render_text(std::slice::from_ref(&report));
    assert!(
        out.starts_with(&format!(
            "{}:5: zoo-case.required: error: case `user_demo`: `params.lr` is missing",
            file.display()
        )),
        "{out}"
    );
    assert!(
        out.ends_with("checked 1 ModelZoo case file: 0 clean, 1 with violations (2 violations)\n"),
        "{out}"
    );
    let json = layout::render_json(std::slice::from_ref(&report));
    assert!(json.contains("\"line\": 7"), "{json}");

    // --all on the zoo root: the case file first, then every model directory.
    let all = Validator::new(&Options::default())
        .unwrap()
        .check_tree(t.path())
        .unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(all[0].kind, layout::ModelKind::ZooCases);
    assert_eq!(all[0].findings.len(), 2);
}

/// A file that is not a case file is an error naming it (exit 2 in the CLI), not a finding.
#[test]
fn a_file_that_is_no_case_file_is_an_error() {
    let t = tempfile::tempdir().unwrap();
    let ours = t.path().join("model.yaml");
    write(&ours, "models: []\n");
    let err = Validator::new(&Options::default())
        .unwrap()
        .check_path(&ours)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("not a model directory nor a ModelZoo case file")
            && err.contains("this repository's model.yaml schema"),
        "{err}"
    );
}

/// A zoo root whose `PyTorch/contrib/model_config/model.yaml` is in this repository's schema
/// is walked as before: that file is an index, not a case file.
#[test]
fn a_model_yaml_of_ours_at_the_case_files_place_is_an_index() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("PyTorch/contrib/Classification/demo");
    python_model(&d, "demo");
    write(
        &t.path().join("PyTorch/contrib/model_config/model.yaml"),
        "models: []\n",
    );
    let reports = Validator::new(&Options::default())
        .unwrap()
        .check_tree(t.path())
        .unwrap();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0].kind, layout::ModelKind::Python);
    assert_eq!(rules(&reports[0]), vec!["model-yaml.entry"]);
}

/// Issue #41: a model README named `readme` (no extension) was not reviewed at all. Its name
/// is the `layout.readme` finding and its content is checked like README.md's.
#[test]
fn a_readme_under_another_name_is_named_and_still_checked() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("MaskFormer");
    python_model(&d, "maskformer");
    fs::remove_file(d.join("README.md")).unwrap();
    write(
        &d.join("readme"),
        README_ZH.replace("# Demo", "# <MODLE MaskFormer>"),
    );
    let r = check(&d);
    assert_eq!(
        rules(&r),
        vec!["layout.readme", "readme.placeholders"],
        "{:?}",
        r.findings
    );
    assert!(r.findings.iter().all(|f| f.path == d.join("readme")));
    assert!(
        r.findings[0]
            .message
            .contains("named `readme`: rename it to README.md"),
        "{}",
        r.findings[0].message
    );
    assert!(
        r.findings[1]
            .message
            .contains("<MODLE MaskFormer> on line 1"),
        "{}",
        r.findings[1].message
    );
    // Without any README the finding is the missing README.md, as before.
    fs::remove_file(d.join("readme")).unwrap();
    let r = check(&d);
    assert_eq!(rules(&r), vec!["layout.readme"]);
    assert!(r.findings[0].message.starts_with("missing: README.md"));
}
