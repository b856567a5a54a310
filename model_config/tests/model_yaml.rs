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
