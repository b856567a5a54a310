//! Which rounds ran on the SDAA emulator: an `sdaa` case whose console names the emulator's
//! device (or prints its EMULATOR version table), or — with a quiet console — whose SDAA
//! runtime under `$SDAA_HOME` is the emulator's. Alone in its file: it sets `SDAA_HOME`.

use std::path::{Path, PathBuf};

use modelzoo_bench::config::{CaseStore, Resolved};
use modelzoo_bench::key::CaseKey;
use modelzoo_bench::round::emulated;
use serde_yaml::Value;

fn case(key: &str) -> Resolved {
    let store = CaseStore::open(&Path::new(env!("CARGO_MANIFEST_DIR")).join("cases")).unwrap();
    let key: CaseKey = key.parse().unwrap();
    store
        .resolve(&key, &[("data_dir".into(), Value::String(".".into()))])
        .unwrap()
}

#[test]
fn emulated_rounds_are_told_from_hardware_ones() {
    let t = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| -> PathBuf {
        let p = t.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    std::env::remove_var("SDAA_HOME");
    std::env::remove_var("TECO_HOME");
    let sdaa = case("resnet:rust-tch:sdaa:1:1:1");
    let cpu = case("resnet:rust-tch:cpu:1:1:1");
    // The engine's start line names the device its SDAA runtime reports.
    let engine = write(
        "node0.log",
        &format!(
            "{}\n2026-01-01T00:00:00Z  INFO modelzoo_engine::app: resnet18 on sdaa:0 (SDAA emulator device 0), 11.7M parameters, precision Fp32\n",
            "x".repeat(200_000)
        ),
    );
    assert!(emulated(&sdaa, std::slice::from_ref(&engine)));
    assert!(
        !emulated(&cpu, &[engine]),
        "only an sdaa case can be emulated"
    );
    // The emulator's torch_sdaa version table (a Python model).
    let python = write(
        "node1.log",
        " Torch-SDAA   | 2.0.0 (EMULATOR: /k/python/torch_sdaa, /k/lib64/libtorch_sdaa.so)\n",
    );
    assert!(emulated(&sdaa, &[python]));
    // A card: the vendor's table, a device name without the emulator's.
    let card = write(
        "node2.log",
        " Torch-SDAA   | 2.0.0\nresnet18 on sdaa:0 (T100), precision Fp32\n",
    );
    assert!(!emulated(&sdaa, std::slice::from_ref(&card)));
    // A quiet console: the runtime the runs load says it.
    let home = t.path().join("sdk");
    std::fs::create_dir_all(home.join("lib64")).unwrap();
    std::fs::write(
        home.join("lib64/libsdaart.so"),
        b"\x7fELF\0\0SDAA emulator device %d\0",
    )
    .unwrap();
    std::env::set_var("SDAA_HOME", &home);
    assert!(emulated(&sdaa, std::slice::from_ref(&card)));
    std::env::set_var("SDAA_HOME", t.path().join("missing"));
    assert!(!emulated(&sdaa, &[card]));
    // The kit's own emulator build, when there is one.
    let kit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/sdaa-emulator");
    if kit.join("lib64/libsdaart.so").exists() {
        std::env::set_var("SDAA_HOME", &kit);
        assert!(emulated(&sdaa, &[]));
    }
}
