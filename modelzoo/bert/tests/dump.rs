//! `run_bert --dump`: bert_tiny's first pretraining step dumped for `modelzoo diff` — aten ops
//! carry the Hugging Face module paths as scopes (backward ops too), `module` records only
//! modules, and the fp64 arbiter runs in float64.

use std::path::Path;
use std::process::Command;

use modelzoo_testkit::step1_dump_records;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_run_bert");

fn dump(dir: &Path, name: &str, extra: &[&str]) -> Vec<Value> {
    step1_dump_records(
        Command::new(BIN)
            .args([
                "--model_name",
                "bert_tiny",
                "--step",
                "1",
                "--batch_size",
                "4",
            ])
            .args(["--max_seq_length", "32"])
            .arg("--output_dir")
            .arg(dir.join(format!("{name}_out")))
            .arg("--dump")
            .arg(dir.join(name))
            .args(extra)
            .env("OMP_NUM_THREADS", "1"),
        &dir.join(name),
    )
}

fn s<'a>(r: &'a Value, k: &str) -> &'a str {
    r[k].as_str().unwrap()
}

#[test]
fn bert_dumps_carry_hugging_face_module_scopes_at_every_level() {
    let dir = tempfile::tempdir().unwrap();
    let ops = dump(dir.path(), "op", &[]);
    let scoped = |phase: &str, scope: &str| {
        ops.iter()
            .any(|r| s(r, "phase") == phase && s(r, "scope") == scope)
    };
    for scope in [
        "bert.embeddings",
        "bert.encoder.layer.0.attention.self",
        "bert.encoder.layer.1.intermediate",
        "bert.pooler",
        "cls.predictions",
        "cls.seq_relationship",
    ] {
        assert!(scoped("forward", scope), "no forward op in {scope}");
    }
    for scope in ["bert.encoder.layer.0.attention.self", "cls.predictions"] {
        assert!(scoped("backward", scope), "no backward op in {scope}");
    }
    assert!(ops.iter().all(|r| s(r, "op").starts_with("aten::")));

    let modules = dump(dir.path(), "module", &["--dump_level", "module"]);
    assert!(!modules.is_empty());
    assert!(modules.iter().all(|r| s(r, "op").starts_with("module::")));
    assert!(modules
        .iter()
        .any(|r| s(r, "key") == "module::bert.encoder.layer.1.output#0.forward.output.0"));

    let fp64 = dump(dir.path(), "fp64", &["--dump_dtype", "fp64"]);
    let linear = fp64
        .iter()
        .find(|r| s(r, "op") == "aten::linear" && s(r, "io") == "output")
        .expect("a linear output");
    assert_eq!(s(linear, "dtype"), "float64");
}
