//! run_vit on the SDAA emulator (target/sdaa-emulator, built by `make build`) with autocast
//! (fp16 on sdaa). The emulator is a stand-in for hardware we cannot have: this run proves the
//! plumbing (device loading, PrivateUse1 placement, fp16 with loss scaling, logging), never
//! SDAA performance or numerics.

mod common;

use common::{emulator_home, log_of, series, small, text, with, BIN};
use std::process::Command;

#[test]
fn vit_tiny_amp_trains_on_the_emulator_and_its_log_parses() {
    let dir = tempfile::tempdir().unwrap();
    let args = with(
        small(dir.path()),
        &[
            "--batch_size",
            "16",
            "--device",
            "sdaa",
            "--autocast",
            "--step",
            "3",
            "--logging_freq",
            "1",
            "--synthetic_samples",
            "64",
        ],
    );
    let o = Command::new(BIN)
        .args(&args)
        .env("SDAA_HOME", emulator_home())
        .env_remove("TECO_HOME")
        .env_remove("SDAA_TORCH_PLUGIN")
        .env("RUST_LOG", "warn")
        .output()
        .expect("run_vit starts");
    assert!(o.status.success(), "{}", text(&o));
    let log = log_of(dir.path(), "vit_tiny");
    let losses = series(&log, "train.loss");
    assert_eq!(losses.len(), 3, "{}", text(&o));
    assert!(losses.iter().all(|(_, l)| l.is_finite()), "{losses:?}");
    assert_eq!(series(&log, "train.ips").len(), 3);
    assert!(!series(&log, "val.top1").is_empty(), "{}", text(&o));
}
