//! model.yaml: the zoo's own file loads, and every kind of mistake is a located error.

use std::path::{Path, PathBuf};

use model_config::{Framework, ModelEntry, ModelYaml, ModelYamlError};

fn write(dir: &Path, text: &str) -> PathBuf {
    let cfg = dir.join("model_config");
    std::fs::create_dir_all(&cfg).unwrap();
    let path = cfg.join("model.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

const GOOD_ENTRY: &str = "\
models:
  - name: demo
    path: PyTorch/Classification/Demo
    framework: pytorch
    category: Classification
    devices: [sdaa, cpu]
    command: cd run_scripts && python run_demo.py --device {device} --step 10 --output_dir {output_dir}
    log: \"{output_dir}/dlllogger.json\"
    metrics: [train.loss, train.ips]
    timeout: 300
";

#[test]
fn the_zoos_model_yaml_loads_and_lists_resnet() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("model.yaml");
    let yaml = ModelYaml::load(&path).unwrap();
    let resnet = yaml.get("resnet").expect("resnet entry");
    assert_eq!(resnet.framework, Framework::RustTch);
    assert_eq!(resnet.path, "modelzoo/resnet");
    assert!(resnet.devices.iter().any(|d| d == "cpu"));
    assert!(resnet.command.contains("--device {device}"));
    // The entry's path is the real crate directory.
    let dir = yaml.model_dir(resnet);
    assert!(dir.join("Cargo.toml").is_file(), "{}", dir.display());
}

#[test]
fn entry_fields_and_placeholders() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(tmp.path(), GOOD_ENTRY);
    let yaml = ModelYaml::load(&path).unwrap();
    assert_eq!(yaml.root, tmp.path().canonicalize().unwrap());
    let e = yaml.get("demo").unwrap();
    assert_eq!(e.timeout, 300);
    assert_eq!(e.metrics, vec!["train.loss", "train.ips"]);
    let out = Path::new("/tmp/ci out/demo");
    assert_eq!(
        e.command_for("cpu", out),
        "cd run_scripts && python run_demo.py --device cpu --step 10 --output_dir '/tmp/ci out/demo'"
    );
    let model_dir = yaml.model_dir(e);
    assert_eq!(
        e.log_path(&model_dir, out),
        PathBuf::from("/tmp/ci out/demo/dlllogger.json")
    );
    let rel = ModelEntry {
        log: "run_scripts/train.log".into(),
        ..e.clone()
    };
    assert_eq!(
        rel.log_path(&model_dir, out),
        model_dir.join("run_scripts/train.log")
    );
}

#[test]
fn explicit_root_is_relative_to_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(tmp.path(), &format!("root: ../zoo\n{GOOD_ENTRY}"));
    let yaml = ModelYaml::load(&path).unwrap();
    let e = yaml.get("demo").unwrap();
    assert_eq!(
        yaml.model_dir(e),
        tmp.path()
            .join("model_config/../zoo/PyTorch/Classification/Demo")
    );
}

fn parse_err(text: &str) -> (String, ModelYamlError) {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(tmp.path(), text);
    let err = ModelYaml::load(&path).unwrap_err();
    (err.to_string(), err)
}

#[test]
fn unknown_key_names_line_and_valid_keys() {
    let text = GOOD_ENTRY.replace("    timeout: 300\n", "    timeout: 300\n    gpus: 8\n");
    let (msg, err) = parse_err(&text);
    assert!(
        matches!(err, ModelYamlError::Parse { line: Some(11), .. }),
        "{msg}"
    );
    assert!(msg.contains("model.yaml:11:"), "{msg}");
    assert!(msg.contains("unknown field `gpus`"), "{msg}");
    assert!(
        msg.contains("`command`") && msg.contains("`timeout`"),
        "{msg}"
    );
}

#[test]
fn missing_field_names_line_and_keys() {
    let text = GOOD_ENTRY.replace("    log: \"{output_dir}/dlllogger.json\"\n", "");
    let (msg, err) = parse_err(&text);
    assert!(
        matches!(err, ModelYamlError::Parse { line: Some(_), .. }),
        "{msg}"
    );
    assert!(msg.contains("missing field `log`"), "{msg}");
    assert!(
        msg.contains("an entry has the keys: name, path, framework"),
        "{msg}"
    );
}

#[test]
fn wrong_types_and_unknown_framework() {
    let (msg, _) = parse_err(&GOOD_ENTRY.replace("timeout: 300", "timeout: soon"));
    assert!(
        msg.contains("model.yaml:10:") && msg.contains("timeout"),
        "{msg}"
    );
    let (msg, _) = parse_err(&GOOD_ENTRY.replace("framework: pytorch", "framework: jax"));
    assert!(msg.contains("unknown variant `jax`"), "{msg}");
    assert!(msg.contains("rust-tch") && msg.contains("paddle"), "{msg}");
    let (msg, _) = parse_err("modles: []\n");
    assert!(
        msg.contains("unknown field `modles`") && msg.contains("`models`"),
        "{msg}"
    );
    let (msg, _) = parse_err("models: [\n");
    assert!(
        matches!(
            parse_err("models: [\n").1,
            ModelYamlError::Parse { line: Some(_), .. }
        ),
        "{msg}"
    );
}

#[test]
fn semantic_checks_point_at_the_entry() {
    for (from, to, needle) in [
        ("--step 10", "--epoch 1", "must pass --step"),
        (
            "devices: [sdaa, cpu]",
            "devices: [sdaa, tpu]",
            "unknown device `tpu`",
        ),
        ("devices: [sdaa, cpu]", "devices: []", "`devices` is empty"),
        (
            "metrics: [train.loss, train.ips]",
            "metrics: []",
            "`metrics` is empty",
        ),
        ("timeout: 300", "timeout: 0", "at least 1 second"),
        (
            "path: PyTorch/Classification/Demo",
            "path: ../elsewhere",
            "relative path inside",
        ),
        ("name: demo", "name: Demo Model", "lowercase"),
    ] {
        let (msg, err) = parse_err(&GOOD_ENTRY.replace(from, to));
        assert!(msg.contains(needle), "{to}: {msg}");
        assert!(matches!(err, ModelYamlError::Entry { .. }), "{to}: {msg}");
    }
    let (msg, err) = parse_err(&format!("{GOOD_ENTRY}{}", &GOOD_ENTRY["models:\n".len()..]));
    assert!(msg.contains("listed twice"), "{msg}");
    assert!(
        matches!(err, ModelYamlError::Entry { line: Some(2), .. }),
        "{msg}"
    );
    // `--step=5` and the `--steps` alias count.
    assert!(model_config::model_yaml::uses_step("run --step=5"));
    assert!(model_config::model_yaml::uses_step("run --steps 5"));
    assert!(!model_config::model_yaml::uses_step("run --stepsize 5"));
}

#[test]
fn append_entry_keeps_comments_creates_files_and_refuses_duplicates() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(tmp.path(), &format!("# keep me\n{GOOD_ENTRY}"));
    let new = ModelEntry {
        name: "vit".into(),
        path: "PyTorch/Classification/ViT".into(),
        framework: Framework::Pytorch,
        category: "Classification".into(),
        devices: vec!["sdaa".into()],
        command: "cd run_scripts && python run_vit.py --step 5 --device {device}".into(),
        log: "{output_dir}/vit.json".into(),
        metrics: vec!["train.loss".into()],
        timeout: 120,
    };
    let yaml = ModelYaml::append_entry(&path, &new).unwrap();
    assert_eq!(yaml.models.len(), 2);
    assert_eq!(yaml.get("vit"), Some(&new));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("# keep me\nmodels:\n  - name: demo"),
        "{text}"
    );
    assert_eq!(ModelYaml::load(&path).unwrap().get("vit"), Some(&new));

    let err = ModelYaml::append_entry(&path, &new).unwrap_err();
    assert!(err.to_string().contains("already has an entry"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text,
        "unchanged on error"
    );

    let fresh = tmp.path().join("other/model_config/model.yaml");
    let yaml = ModelYaml::append_entry(&fresh, &new).unwrap();
    assert_eq!(yaml.models, vec![new.clone()]);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644);

    // An invalid entry is refused before anything is written.
    let bad = ModelEntry {
        name: "bad".into(),
        command: "python run.py".into(),
        ..new
    };
    let err = ModelYaml::append_entry(&fresh, &bad).unwrap_err();
    assert!(err.to_string().contains("--step"), "{err}");
    assert_eq!(ModelYaml::load(&fresh).unwrap().models.len(), 1);
}

/// Issue #13: a 100,000-deep document took ~41 s to be refused (libyaml's scanner is
/// quadratic in flow nesting); the depth guard refuses it before parsing, naming the file, the
/// line and the limit. Block nesting is refused by serde_yaml's limit, reported the same way.
#[test]
fn nesting_past_the_limit_is_refused_with_file_line_and_limit() {
    let n = 100_000;
    for (what, text, line) in [
        (
            "flow sequences",
            format!("models:\n  - name: [{}{}]\n", "[".repeat(n), "]".repeat(n)),
            2,
        ),
        (
            "flow mappings",
            format!("# deep\n\nmodels: {}1{}\n", "{a: ".repeat(n), "}".repeat(n)),
            3,
        ),
        ("unclosed", format!("models: {}\n", "[".repeat(n)), 1),
        (
            "block sequences",
            format!("models:\n{}x\n", "- ".repeat(n)),
            2,
        ),
    ] {
        let (msg, err) = parse_err(&text);
        assert!(
            matches!(err, ModelYamlError::Parse { line: Some(l), .. } if l == line),
            "{what}: {msg}"
        );
        assert!(
            msg.contains(&format!(
                "model.yaml:{line}: collections nested more than 128 levels deep"
            )),
            "{what}: {msg}"
        );
    }
    // At the limit (the top-level mapping is one level) it is a plain type error.
    let text = format!("models: {}{}\n", "[".repeat(127), "]".repeat(127));
    let (msg, _) = parse_err(&text);
    assert!(!msg.contains("nested"), "{msg}");
}

#[test]
fn timeout_past_the_limit_is_refused_at_load() {
    for timeout in ["18446744073709551615", "86401"] {
        let (msg, err) =
            parse_err(&GOOD_ENTRY.replace("timeout: 300", &format!("timeout: {timeout}")));
        assert!(
            matches!(err, ModelYamlError::Entry { line: Some(2), .. }),
            "{msg}"
        );
        assert!(
            msg.contains(&format!(
                "`timeout: {timeout}` is more than the limit of 86400 seconds"
            )),
            "{msg}"
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let ok = write(
        tmp.path(),
        &GOOD_ENTRY.replace("timeout: 300", "timeout: 86400"),
    );
    assert_eq!(ModelYaml::load(&ok).unwrap().models[0].timeout, 86_400);
}

/// A log outside `{output_dir}` (which CI empties before each run) could be a file left by an
/// earlier run and pass for this one.
#[test]
fn log_outside_output_dir_is_refused() {
    for log in [
        "run_scripts/train.log",
        "/tmp/train.log",
        "{output_dir}/../train.log",
        "{output_dir}",
        "{output_dir}/",
        "{output_dir}/a/../../b.log",
        "x/{output_dir}/train.log",
    ] {
        let text = GOOD_ENTRY.replace(
            "log: \"{output_dir}/dlllogger.json\"",
            &format!("log: \"{log}\""),
        );
        let (msg, err) = parse_err(&text);
        assert!(matches!(err, ModelYamlError::Entry { .. }), "{log}: {msg}");
        assert!(
            msg.contains(&format!(
                "`log: {log}` must be a file inside {{output_dir}}"
            )),
            "{log}: {msg}"
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let path = write(
        tmp.path(),
        &GOOD_ENTRY.replace(
            "{output_dir}/dlllogger.json",
            "{output_dir}/./logs/run.json",
        ),
    );
    assert!(ModelYaml::load(&path).is_ok());
}

/// `--step` counts only as a word of the command itself: not in a `#` comment (also right
/// after an operator), not inside a quoted argument.
#[test]
fn step_in_a_shell_comment_does_not_count() {
    use model_config::model_yaml::{shell_words, uses_step};
    for command in [
        "python run.py --epoch 1 # TODO --step 5",
        "python run.py --epoch 1 #--step 5",
        "python run.py --epoch 1;# --step=5",
        "python run.py --epoch 1 && #\n# --steps 5\ntrue",
        "python run.py --name 'fast --step 5'",
        "python run.py --name \"--step\"5",
    ] {
        assert!(!uses_step(command), "{command}");
        let (msg, err) = parse_err(&GOOD_ENTRY.replace(
            "command: cd run_scripts && python run_demo.py --device {device} --step 10 --output_dir {output_dir}",
            &format!("command: {}", serde_json::to_string(command).unwrap()),
        ));
        assert!(
            matches!(err, ModelYamlError::Entry { .. }),
            "{command}: {msg}"
        );
        assert!(msg.contains("must pass --step"), "{command}: {msg}");
    }
    for command in [
        "python run.py --step 5 # short run",
        "python run.py a#b --step=5",
        "python run.py '--step' 5",
        "cd x && python run.py --steps 5;echo done",
        "python run.py \\\n  --step 5",
    ] {
        assert!(uses_step(command), "{command}");
    }
    assert_eq!(
        shell_words("a 'b c'\"d\\\"\" e\\ f;g#h # i\nj").unwrap(),
        ["a", "b cd\"", "e f", "g#h", "j"]
    );
    let (msg, _) = parse_err(&GOOD_ENTRY.replace("--step 10", "--step 10 'oops"));
    assert!(
        msg.contains("not a valid sh command line (unterminated single quote)"),
        "{msg}"
    );
}
