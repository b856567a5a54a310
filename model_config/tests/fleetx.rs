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

/// Writes `files` (relative path, text) under a temp dir; returns it.
fn write_tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// Issue #28: FleetX's own configs start with `_base_: ./pretrain_gpt_base.yaml`; a chain is
/// merged depth-first, base first, the file's keys winning: mappings key by key, lists and
/// scalars (and an empty value) replaced. Base paths are relative to the file naming them.
#[test]
fn base_chain_merges_depth_first_and_the_file_wins() {
    let dir = write_tree(&[
        (
            "common/grand.yaml",
            "Engine:\n  max_steps: 1\n  eval_freq: 7\n  mix_precision:\n    use_pure_fp16: True\n    custom_black_list: [a, b]\n  save_load:\n    save_steps: 5\nData:\n  x: 1\n",
        ),
        (
            "base.yaml",
            "_base_: common/grand.yaml\nEngine:\n  max_steps: 2\n  logging_freq: 3\nModel:\n  hidden_size: 64\n",
        ),
        (
            "cfg.yaml",
            "_base_: ./base.yaml\nEngine:\n  max_steps: 3\n  eval_freq:\n  mix_precision:\n    custom_black_list: [c]\n",
        ),
    ]);
    let path = dir.path().join("cfg.yaml");
    let tree = fleetx::load(Some(&path), &ov(&["Engine.save_load.save_steps=9"])).unwrap();
    assert_eq!(tree.section_names(), vec!["Engine", "Data", "Model"]);
    let engine: EngineConfig = tree.section("Engine").unwrap().unwrap();
    assert_eq!(engine.max_steps, 3, "the file wins over its bases");
    assert_eq!(engine.logging_freq, 3, "the base's key stays");
    assert_eq!(
        engine.eval_freq, 500,
        "an empty value replaces the base's (default)"
    );
    assert!(
        engine.mix_precision.use_pure_fp16,
        "mappings merge key by key"
    );
    assert_eq!(
        engine.mix_precision.custom_black_list,
        vec!["c"],
        "lists are replaced"
    );
    assert_eq!(
        engine.save_load.save_steps, 9,
        "overrides win over all files"
    );
    assert_eq!(tree.get(&["Data", "x"]), Some(&serde_yaml::Value::from(1)));
    assert_eq!(tree.file(), Some(path.as_path()));

    // A list of bases: merged in order, the later one winning.
    let dir = write_tree(&[
        ("a.yaml", "Engine:\n  max_steps: 1\n  eval_iters: 4\n"),
        ("b.yaml", "Engine:\n  max_steps: 2\n"),
        ("cfg.yaml", "_base_: [a.yaml, b.yaml]\nModel: {}\n"),
    ]);
    let tree = fleetx::load(Some(&dir.path().join("cfg.yaml")), &[]).unwrap();
    let engine: EngineConfig = tree.section("Engine").unwrap().unwrap();
    assert_eq!((engine.max_steps, engine.eval_iters), (2, 4));
}

/// An error in a key a base set names the base file and its line; a key the file overrides
/// names the file.
#[test]
fn errors_in_base_keys_name_the_base_file() {
    let dir = write_tree(&[
        (
            "base.yaml",
            "Engine:\n  max_steps: 1\n  mix_precision:\n    scale_los: 2.0\n",
        ),
        ("cfg.yaml", "_base_: base.yaml\nEngine:\n  max_steps: x\n"),
    ]);
    let cfg = dir.path().join("cfg.yaml");
    let base = dir.path().join("base.yaml");
    let tree = fleetx::load(Some(&cfg), &[]).unwrap();
    let err = tree.section::<EngineConfig>("Engine").unwrap_err();
    match &err {
        ConfigError::Invalid { key, origin, .. } => {
            assert_eq!(key, "Engine.max_steps", "{err}");
            assert_eq!(
                origin,
                &Origin::File {
                    path: cfg.clone(),
                    line: Some(3)
                }
            );
        }
        other => panic!("{other:?}"),
    }
    let tree = fleetx::load(Some(&cfg), &ov(&["Engine.max_steps=4"])).unwrap();
    let err = tree.section::<EngineConfig>("Engine").unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("{}:4:", base.display())),
        "names the base and its line: {msg}"
    );
    assert!(msg.contains("unknown field `scale_los`"), "{msg}");
    assert_eq!(
        tree.origin(&["Engine", "mix_precision", "scale_los"]),
        Origin::File {
            path: base,
            line: Some(4)
        }
    );
}

/// A missing base names the file that refers to it and the line; a loop names the chain; a
/// chain deeper than 8 bases is refused naming it; `_base_` must be paths.
#[test]
fn missing_looping_and_too_deep_bases_are_errors_naming_the_chain() {
    let dir = write_tree(&[(
        "cfg.yaml",
        "# FleetX\n_base_: ./pretrain_gpt_base.yaml\nModel:\n  x: 1\n",
    )]);
    let cfg = dir.path().join("cfg.yaml");
    let err = fleetx::load(Some(&cfg), &[]).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ConfigError::Base { .. }), "{msg}");
    assert!(
        msg.starts_with(&format!("{}:2: `_base_`", cfg.display())),
        "{msg}"
    );
    assert!(
        msg.contains("no such file") && msg.contains("pretrain_gpt_base.yaml"),
        "{msg}"
    );

    let dir = write_tree(&[
        ("a.yaml", "_base_: b.yaml\nEngine: {max_steps: 1}\n"),
        ("b.yaml", "_base_: a.yaml\n"),
    ]);
    let msg = fleetx::load(Some(&dir.path().join("a.yaml")), &[])
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("loops back") && msg.contains("a.yaml → ") && msg.contains("b.yaml → "),
        "{msg}"
    );
    assert!(
        msg.contains(&format!("{}:1:", dir.path().join("b.yaml").display())),
        "{msg}"
    );

    let mut files: Vec<(String, String)> = (0..10)
        .map(|i| (format!("f{i}.yaml"), format!("_base_: f{}.yaml\n", i + 1)))
        .collect();
    files.push(("f10.yaml".into(), "Engine: {max_steps: 1}\n".into()));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let dir = write_tree(&refs);
    let msg = fleetx::load(Some(&dir.path().join("f0.yaml")), &[])
        .unwrap_err()
        .to_string();
    assert!(msg.contains("deeper than 8 bases"), "{msg}");
    assert!(
        msg.contains("f0.yaml → ") && msg.contains("f9.yaml"),
        "{msg}"
    );
    // Eight bases deep is fine.
    let tree = fleetx::load(Some(&dir.path().join("f2.yaml")), &[]).unwrap();
    assert_eq!(tree.section_names(), vec!["Engine"]);

    for bad in ["_base_: 5\n", "_base_: [a.yaml, {x: 1}]\n"] {
        let dir = write_tree(&[("cfg.yaml", bad)]);
        let msg = fleetx::load(Some(&dir.path().join("cfg.yaml")), &[])
            .unwrap_err()
            .to_string();
        assert!(msg.contains("`_base_`") && msg.contains("path"), "{msg}");
    }
}

/// Where the `-c` file ends: the last line holding anything and the section it lies in, so a
/// training config cut off inside `Model:` can say so.
#[test]
fn file_end_names_the_last_line_and_its_section() {
    let (_dir, path) = write_yaml(
        "Engine:\n  max_steps: 1\n\nModel:\n  vocab_size: 320\n  # hidden_size: 128\n\n",
    );
    let tree = fleetx::load(Some(&path), &[]).unwrap();
    assert_eq!(
        tree.file_end(),
        Some(fleetx::FileEnd {
            path: path.clone(),
            line: 5,
            section: Some("Model".into())
        })
    );
    assert_eq!(fleetx::load(None, &[]).unwrap().file_end(), None);
}

/// Issue #28: `custom_black_list` / `custom_white_list` are checked against what the model
/// does: under AMP an entry asking for what it does is accepted, any other refused naming the
/// op; names it does not know are refused even with AMP off.
#[test]
fn amp_lists_are_applied_or_refused_against_the_model_table() {
    use fleetx::{AmpOp, MixPrecision};
    let table = [
        AmpOp {
            name: "reduce_sum",
            low_precision: false,
            what: "sums run in fp32",
        },
        AmpOp {
            name: "matmul_v2",
            low_precision: true,
            what: "matmuls run in the AMP dtype",
        },
    ];
    let lists = |black: &[&str], white: &[&str]| MixPrecision {
        custom_black_list: black.iter().map(|s| s.to_string()).collect(),
        custom_white_list: white.iter().map(|s| s.to_string()).collect(),
        ..MixPrecision::default()
    };
    lists(&["reduce_sum"], &["matmul_v2"])
        .check_lists(true, &table)
        .unwrap();
    // AMP off: the lists place nothing, but the names must be known.
    lists(&["matmul_v2"], &["reduce_sum"])
        .check_lists(false, &table)
        .unwrap();
    let e = lists(&["matmul_v2"], &[])
        .check_lists(true, &table)
        .unwrap_err();
    assert_eq!(
        (e.list, e.name.as_str()),
        ("custom_black_list", "matmul_v2")
    );
    assert!(
        e.to_string().contains("asks for fp32") && e.to_string().contains("matmuls run"),
        "{e}"
    );
    let e = lists(&[], &["reduce_sum"])
        .check_lists(true, &table)
        .unwrap_err();
    assert!(
        e.to_string().contains("remove it from custom_white_list"),
        "{e}"
    );
    let e = lists(&["softmax"], &[])
        .check_lists(false, &table)
        .unwrap_err();
    assert!(e.to_string().contains("reduce_sum, matmul_v2"), "{e}");
    let e = lists(&["reduce_sum"], &["reduce_sum"])
        .check_lists(false, &table)
        .unwrap_err();
    assert!(e.to_string().contains("in custom_black_list too"), "{e}");
    // A model with no table refuses every entry.
    let e = lists(&["reduce_sum"], &[])
        .check_lists(false, &[])
        .unwrap_err();
    assert!(e.to_string().contains("no per-op precision lists"), "{e}");
}

/// A `_base_` naming a device or a FIFO is refused at once (reading `/dev/zero` would never
/// end), naming the file that refers to it.
#[test]
fn a_base_that_is_not_a_regular_file_is_refused() {
    let dir = write_tree(&[("cfg.yaml", "_base_: /dev/zero\nModel: {}\n")]);
    let cfg = dir.path().join("cfg.yaml");
    let msg = fleetx::load(Some(&cfg), &[]).unwrap_err().to_string();
    assert!(
        msg.starts_with(&format!("{}:1: `_base_`", cfg.display()))
            && msg.contains("not a regular file"),
        "{msg}"
    );
}

/// Issue #38 C9/D12: the `-c` file itself is opened regular-only (a FIFO hung run_gpt) and read
/// only when within [`fleetx::MAX_CONFIG_BYTES`] (a sparse file here: nothing real written).
#[test]
fn a_config_that_is_a_fifo_or_too_large_is_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.yaml");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let (tx, rx) = std::sync::mpsc::channel();
    let f = fifo.clone();
    std::thread::spawn(move || {
        tx.send(
            fleetx::load(Some(&f), &[])
                .map(drop)
                .unwrap_err()
                .to_string(),
        )
        .unwrap()
    });
    let msg = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("blocked on a FIFO");
    assert!(
        msg.starts_with(&format!("cannot read config file {}", fifo.display()))
            && msg.contains("is a FIFO, not a regular file"),
        "{msg}"
    );
    let big = dir.path().join("big.yaml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(fleetx::MAX_CONFIG_BYTES + 1)
        .unwrap();
    let msg = fleetx::load(Some(&big), &[]).unwrap_err().to_string();
    assert!(
        msg.contains("big.yaml") && msg.contains("larger than 16777216 bytes"),
        "{msg}"
    );
}
