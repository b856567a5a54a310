//! The shipped case configs: layering precedence, refusals (exit 2 before anything runs), the
//! commands a round runs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use modelzoo_bench::config::{CaseStore, Layer};
use modelzoo_bench::key::CaseKey;
use modelzoo_bench::{plan, round, BenchError, Options};
use serde_yaml::Value;

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("cases")
}

fn opts(cases: &[&str], overrides: &[&str]) -> Options {
    Options {
        cases: cases.iter().map(|s| s.to_string()).collect(),
        test_conf: None,
        overrides: overrides.iter().map(|s| s.to_string()).collect(),
        work_dir: PathBuf::from("unused"),
        cases_dir: cases_dir(),
        cwd: PathBuf::from("."),
        path_prefix: Vec::new(),
        timeout: Duration::from_secs(60),
        dry_run: true,
    }
}

fn value(case: &modelzoo_bench::config::Resolved, k: &str) -> (String, Layer) {
    let (v, layer) = &case.params[k];
    (modelzoo_bench::config::scalar_text(v).unwrap(), *layer)
}

#[test]
fn test_conf_beats_vendor_beats_base_on_the_shipped_resnet_case() {
    let p = plan(&opts(&["resnet:rust-tch:cpu:1:1:2"], &["batch_size=4"])).unwrap();
    let case = &p[0];
    assert_eq!(value(case, "batch_size"), ("4".into(), Layer::TestConf));
    assert_eq!(
        value(case, "model_name"),
        ("resnet18".into(), Layer::Vendor)
    );
    assert_eq!(value(case, "momentum"), ("0.9".into(), Layer::Base));
    assert_eq!(case.precision(), "fp32");
    let argv = round::command(case, Path::new("/w/out"), 0, 1234);
    let line = argv.join(" ");
    assert!(line.starts_with("run_resnet "), "{line}");
    for part in [
        "--batch_size 4",
        "--model_name resnet18",
        "--step 8",
        "--device cpu",
        "--output_dir /w/out",
    ] {
        assert!(line.contains(part), "{part} not in {line}");
    }
    // 1x1: no launcher flags; synthetic data: no dataset flag; bench-level keys never passed.
    for absent in [
        "--nproc_per_node",
        "--dataset_path",
        "--vendor",
        "--data_dir",
        "--autocast",
    ] {
        assert!(!line.contains(absent), "{absent} in {line}");
    }
}

#[test]
fn a_test_conf_file_is_the_top_layer_and_its_dataset_fills_data_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("imagenet");
    std::fs::create_dir(&data).unwrap();
    let conf = tmp.path().join("test_conf.yaml");
    std::fs::write(
        &conf,
        format!(
            "cases:\n  \"resnet:rust-tch:A100:2:8:1\": {}\n  \"gpt:rust-tch:cpu:1:1:1\": \"\"\noverrides:\n  batch_size: 2\n",
            data.display()
        ),
    )
    .unwrap();
    let mut o = opts(&[], &["batch_size=3"]);
    o.test_conf = Some(conf);
    let p = plan(&o).unwrap();
    let a100 = p.iter().find(|c| c.key.hardware == "A100").unwrap();
    // -o is applied after the file's overrides.
    assert_eq!(value(a100, "batch_size"), ("3".into(), Layer::TestConf));
    assert_eq!(value(a100, "lr"), ("1.6".into(), Layer::Vendor));
    assert_eq!(value(a100, "warmup_epochs"), ("5.0".into(), Layer::Vendor));
    assert_eq!(a100.precision(), "amp_fp16");
    let node1 = round::command(a100, Path::new("/o"), 1, 29999).join(" ");
    for part in [
        "--device cuda",
        &format!("--dataset_path {}", data.display()),
        "--nproc_per_node 8",
        "--nnode 2",
        "--node_rank 1",
        "--master_addr 127.0.0.1",
        "--master_port 29999",
        "--autocast",
        "--channels_last",
    ] {
        assert!(node1.contains(part), "{part} not in {node1}");
    }
    let gpt = p.iter().find(|c| c.key.model == "gpt").unwrap();
    let line = round::command(gpt, Path::new("/o"), 0, 1).join(" ");
    assert!(
        line.contains("-c modelzoo/gpt/configs/gpt_tiny.yaml")
            || line.contains("--config modelzoo/gpt/configs/gpt_tiny.yaml"),
        "{line}"
    );
    assert!(line.contains("-o Engine.max_steps=12"), "{line}");
    assert!(
        line.contains("-o Engine.mix_precision.use_pure_fp16=false"),
        "{line}"
    );
}

fn refused(cases: &[&str], overrides: &[&str]) -> String {
    let e: BenchError = plan(&opts(cases, overrides)).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    e.to_string()
}

#[test]
fn a_non_mutable_override_is_refused_naming_the_key_and_the_mutable_ones() {
    let msg = refused(&["resnet:rust-tch:cpu:1:1:1"], &["momentum=0.5"]);
    assert!(
        msg.contains("`momentum`") && msg.contains("mutable_params"),
        "{msg}"
    );
    assert!(msg.contains("vendor, data_dir, model_name"), "{msg}");
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    for (key, says) in [
        (
            "vit:rust-tch:cpu:1:1:1",
            "unknown model `vit`; known: bert, gpt, resnet",
        ),
        (
            "resnet:pytorch:cpu:1:1:1",
            "unknown framework `pytorch`; known: rust-tch",
        ),
        (
            "resnet:rust-tch:TPU:1:1:1",
            "unknown hardware `TPU`; known: A100, H100, cpu, sdaa",
        ),
        (
            "resnet:rust-tch:cpu:1:0:1",
            "nproc 0: must be a positive integer",
        ),
        ("resnet:rust-tch:cpu:1", "4 field(s)"),
        (
            "resnet:rust-tch:cpu:1:3:1",
            "config_cpux1x3.yaml; that folder ships: config_cpux1x1.yaml",
        ),
        // ImageNet cases need a dataset.
        (
            "resnet:rust-tch:H100:1:8:1",
            "needs a dataset and none was given",
        ),
        ("gpt:rust-tch:sdaa:1:1:1", "needs a dataset"),
    ] {
        let msg = refused(&[key], &[]);
        assert!(msg.contains(says), "{key}: {msg}");
    }
    let msg = refused(&["resnet:rust-tch:cpu:1:1:1"], &["data_dir=/no/such/dir"]);
    assert!(
        msg.contains("/no/such/dir") && msg.contains("test_conf"),
        "{msg}"
    );
    assert!(refused(&["resnet:rust-tch:cpu:1:1:1"], &["batch_size"]).contains("key=value"));
    assert!(refused(&[], &[]).contains("no cases"));
    let msg = refused(
        &["resnet:rust-tch:cpu:1:1:2", "resnet:rust-tch:cpu:1:1:3"],
        &[],
    );
    assert!(msg.contains("listed twice"), "{msg}");
}

/// Every shipped vendor config is valid: named after a known hardware, overriding only
/// mutable params, its vendor matching the hardware's.
#[test]
fn every_shipped_vendor_config_resolves() {
    let store = CaseStore::open(&cases_dir()).unwrap();
    let mut seen = 0;
    for (hw_name, hw) in &store.hardware {
        for model in store.models() {
            let dir = cases_dir()
                .join(&hw.vendor)
                .join(format!("{model}-rust-tch"));
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let name = entry.file_name().into_string().unwrap();
                let Some(shape) = name
                    .strip_prefix(&format!("config_{hw_name}x"))
                    .and_then(|s| s.strip_suffix(".yaml"))
                else {
                    continue;
                };
                let (n, p) = shape.split_once('x').unwrap();
                let key: CaseKey = format!("{model}:rust-tch:{hw_name}:{n}:{p}:1")
                    .parse()
                    .unwrap();
                let data = vec![("data_dir".to_string(), Value::String(".".into()))];
                let case = store
                    .resolve(&key, &data)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(case.text("vendor").as_deref(), Some(hw.vendor.as_str()));
                seen += 1;
            }
        }
    }
    // cpu 1x1 1x2 1x8 2x8 (+2x1 resnet), A100 / H100 / sdaa 1x1 1x8 2x8, for resnet, gpt
    // and bert.
    assert_eq!(seen, 3 * (4 + 9) + 1);
}
