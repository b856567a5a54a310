//! FleetX config loader: file + `-o` overrides into typed sections, and the errors a user
//! sees for every kind of mistake.

use std::path::{Path, PathBuf};

use model_config::fleetx::{self, ConfigError, EngineConfig, Origin};

fn gpt_yaml() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gpt_345m_single_card.yaml")
}

fn ov(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn write_yaml(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cfg.yaml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

#[test]
fn fleetx_gpt_config_loads_with_empty_keys_as_defaults() {
    let tree = fleetx::load(Some(&gpt_yaml()), &[]).unwrap();
    tree.check_sections(&["Global", "Engine", "Data", "Model", "Optimizer"])
        .unwrap();
    let engine: EngineConfig = tree.section("Engine").unwrap().unwrap();
    assert_eq!(engine.max_steps, 500_000);
    assert_eq!(
        engine.accumulate_steps, 1,
        "empty key falls back to the default"
    );
    assert_eq!(engine.test_iters, None);
    assert!(engine.mix_precision.use_pure_fp16);
    assert_eq!(engine.mix_precision.scale_loss, 32768.0);
    assert_eq!(
        engine.mix_precision.custom_white_list,
        vec!["lookup_table", "lookup_table_v2"]
    );
    assert_eq!(engine.save_load.save_steps, 1000);
    assert_eq!(engine.save_load.output_dir, PathBuf::from("./output"));
    assert_eq!(engine.save_load.ckpt_dir, None);
}

#[test]
fn overrides_replace_file_values_and_parse_yaml_scalars() {
    let tree = fleetx::load(
        Some(&gpt_yaml()),
        &ov(&[
            "Engine.max_steps=100",
            "Engine.mix_precision.scale_loss=1e-4",
            "Engine.mix_precision.use_pure_fp16=false",
            "Engine.mix_precision.custom_black_list=[a, 'b']",
            "Engine.save_load.ckpt_dir=./ckpt/GPT_345M/mp_00",
            "Engine.save_load.output_dir='out dir'",
            "Engine.max_steps=7",
        ]),
    )
    .unwrap();
    let engine: EngineConfig = tree.section("Engine").unwrap().unwrap();
    assert_eq!(engine.max_steps, 7, "a later override wins");
    assert_eq!(engine.mix_precision.scale_loss, 1e-4);
    assert!(!engine.mix_precision.use_pure_fp16);
    assert_eq!(engine.mix_precision.custom_black_list, vec!["a", "b"]);
    assert_eq!(
        engine.save_load.ckpt_dir,
        Some(PathBuf::from("./ckpt/GPT_345M/mp_00"))
    );
    assert_eq!(engine.save_load.output_dir, PathBuf::from("out dir"));
    // Untouched keys keep the file's values.
    assert_eq!(engine.eval_freq, 500);
}

#[test]
fn no_file_gives_defaults_and_overrides_build_sections() {
    let tree = fleetx::load(None, &[]).unwrap();
    assert!(tree.section::<EngineConfig>("Engine").unwrap().is_none());
    let tree = fleetx::load(None, &ov(&["Engine.save_load.keep_last=3"])).unwrap();
    let engine: EngineConfig = tree.section("Engine").unwrap().unwrap();
    assert_eq!(engine.save_load.keep_last, Some(3));
    assert_eq!(
        EngineConfig {
            save_load: model_config::fleetx::SaveLoad {
                keep_last: Some(3),
                ..Default::default()
            },
            ..Default::default()
        },
        engine
    );
}

#[test]
fn unknown_override_key_names_path_origin_and_valid_keys() {
    let tree = fleetx::load(Some(&gpt_yaml()), &ov(&["Engine.max_stepz=10"])).unwrap();
    let err = tree.section::<EngineConfig>("Engine").unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(&err, ConfigError::Invalid { origin: Origin::Override(t), .. } if t == "Engine.max_stepz=10"),
        "{msg}"
    );
    assert!(msg.contains("unknown field `max_stepz`"), "{msg}");
    assert!(
        msg.contains("`max_steps`") && msg.contains("`save_load`"),
        "lists valid keys: {msg}"
    );
    assert!(msg.contains("-o Engine.max_stepz=10"), "{msg}");

    // Nested: the valid keys of the nested section are listed.
    let tree = fleetx::load(None, &ov(&["Engine.mix_precision.fp16=true"])).unwrap();
    let msg = tree
        .section::<EngineConfig>("Engine")
        .unwrap_err()
        .to_string();
    assert!(msg.contains("unknown field `fp16`"), "{msg}");
    assert!(
        msg.contains("`use_pure_fp16`") && msg.contains("`custom_white_list`"),
        "{msg}"
    );
}

#[test]
fn unknown_key_with_empty_value_is_still_an_error() {
    let tree = fleetx::load(None, &ov(&["Engine.typo="])).unwrap();
    let msg = tree
        .section::<EngineConfig>("Engine")
        .unwrap_err()
        .to_string();
    assert!(msg.contains("unknown field `typo`"), "{msg}");
}

#[test]
fn type_mismatch_names_key_and_expected_type() {
    let tree = fleetx::load(Some(&gpt_yaml()), &ov(&["Engine.max_steps=abc"])).unwrap();
    let err = tree.section::<EngineConfig>("Engine").unwrap_err();
    match &err {
        ConfigError::Invalid {
            key,
            origin,
            message,
        } => {
            assert_eq!(key, "Engine.max_steps");
            assert_eq!(origin, &Origin::Override("Engine.max_steps=abc".into()));
            assert!(
                message.contains("invalid type: string \"abc\""),
                "{message}"
            );
            assert!(message.contains("u64"), "{message}");
        }
        other => panic!("unexpected error {other:?}"),
    }
}

#[test]
fn file_errors_carry_file_and_line() {
    let (_dir, path) = write_yaml(
        "Engine:\n  max_steps: 10\n  mix_precision:\n    use_pure_fp16: true\n    scale_los: 2.0\n",
    );
    let tree = fleetx::load(Some(&path), &[]).unwrap();
    let err = tree.section::<EngineConfig>("Engine").unwrap_err();
    let msg = err.to_string();
    match &err {
        ConfigError::Invalid { key, origin, .. } => {
            assert_eq!(key, "Engine.mix_precision.scale_los");
            assert_eq!(
                origin,
                &Origin::File {
                    path: path.clone(),
                    line: Some(5)
                }
            );
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert!(msg.starts_with(&format!("{}:5:", path.display())), "{msg}");

    let (_dir, path) = write_yaml("Engine:\n  logging_freq: 1\n  eval_freq: [1\n");
    let err = fleetx::load(Some(&path), &[]).unwrap_err();
    assert!(
        matches!(err, ConfigError::Yaml { line: Some(_), .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains(&format!("{}:", path.display())));

    let (_dir, path) = write_yaml("- just\n- a list\n");
    let err = fleetx::load(Some(&path), &[]).unwrap_err();
    assert!(
        matches!(err, ConfigError::NotAMapping { found: "list", .. }),
        "{err:?}"
    );

    let err = fleetx::load(Some(Path::new("/nonexistent/cfg.yaml")), &[]).unwrap_err();
    assert!(matches!(err, ConfigError::Read { .. }));
    assert!(err.to_string().contains("/nonexistent/cfg.yaml"));
}

#[test]
fn unknown_sections_are_reported_only_when_asked() {
    let tree = fleetx::load(Some(&gpt_yaml()), &ov(&["Foo.x=1"])).unwrap();
    // Asking for a known section still works.
    assert!(tree.section::<EngineConfig>("Engine").unwrap().is_some());
    let err = tree
        .check_sections(&["Global", "Engine", "Data", "Model", "Optimizer"])
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("unknown config section `Foo`"), "{msg}");
    assert!(
        msg.contains("Global, Engine, Data, Model, Optimizer"),
        "{msg}"
    );
    assert!(msg.contains("-o Foo.x=1"), "{msg}");

    // A section misspelled in the file points at its line.
    let (_dir, path) = write_yaml("Engine:\n  max_steps: 1\nEngnie:\n  max_steps: 2\n");
    let tree = fleetx::load(Some(&path), &[]).unwrap();
    let msg = tree.check_sections(&["Engine"]).unwrap_err().to_string();
    assert!(msg.starts_with(&format!("{}:3:", path.display())), "{msg}");
}

#[test]
fn malformed_overrides_are_rejected() {
    for (text, needle) in [
        ("Engine.max_steps", "no `=`"),
        ("=5", "empty key"),
        ("Engine..max_steps=5", "empty key segment"),
        ("Engine.max_steps=[1", "not a YAML value"),
    ] {
        let err = fleetx::load(None, &ov(&[text])).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(err, ConfigError::OverrideSyntax { .. }),
            "{text}: {msg}"
        );
        assert!(msg.contains(needle), "{text}: {msg}");
    }
    // Setting a key below a scalar.
    let err = fleetx::load(Some(&gpt_yaml()), &ov(&["Engine.max_steps.sub=1"])).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, ConfigError::OverrideConflict { ref parent, .. } if parent == "Engine.max_steps"),
        "{msg}"
    );
}

#[test]
fn free_form_sections_deserialize_into_caller_types() {
    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Batch {
        global_batch_size: u64,
        local_batch_size: u64,
        micro_batch_size: u64,
    }
    #[derive(serde::Deserialize, Debug)]
    struct Data {
        batch_size: Batch,
    }
    let tree = fleetx::load(
        Some(&gpt_yaml()),
        &ov(&["Data.batch_size.micro_batch_size=2"]),
    )
    .unwrap();
    let data: Data = tree.section("Data").unwrap().unwrap();
    assert_eq!(data.batch_size.micro_batch_size, 2);
    assert_eq!(data.batch_size.global_batch_size, 8);
    assert_eq!(data.batch_size.local_batch_size, 8);
}

/// Issue #13: a config (or `-o` value) nested 100,000 deep is refused by the depth guard
/// before libyaml's quadratic scan, naming the file, the line and the limit.
#[test]
fn nesting_past_the_limit_is_refused_in_files_and_overrides() {
    let n = 100_000;
    let (_dir, path) = write_yaml(&format!(
        "Engine:\n  max_steps: 10\nModel:\n  layers: {}{}\n",
        "[".repeat(n),
        "]".repeat(n)
    ));
    let err = fleetx::load(Some(&path), &[]).unwrap_err();
    assert!(
        matches!(&err, ConfigError::Yaml { line: Some(4), .. }),
        "{err}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("cfg.yaml:4: invalid YAML: collections nested more than 128 levels deep"),
        "{msg}"
    );

    let deep = format!("Model.layers={}1{}", "{a: ".repeat(n), "}".repeat(n));
    let err = fleetx::load(None, &[deep]).unwrap_err();
    assert!(matches!(&err, ConfigError::OverrideSyntax { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("is not a YAML value: collections nested more than 128 levels deep"),
        "{}",
        &err.to_string()[err.to_string().len() - 200..]
    );
    // Ordinary nesting is untouched.
    let tree = fleetx::load(None, &ov(&["Model.layers=[[1, 2], {a: [3]}]"])).unwrap();
    assert!(tree.raw().get("Model").is_some());
}
