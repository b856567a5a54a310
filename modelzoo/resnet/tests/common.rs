//! Helpers shared by the run_resnet integration tests: run the real binary, read its log.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const BIN: &str = env!("CARGO_BIN_EXE_run_resnet");

/// The arguments of a small, quick synthetic run.
pub fn small(out: &Path) -> Vec<String> {
    [
        "--model_name",
        "resnet18",
        "--num_classes",
        "10",
        "--image_size",
        "32",
        "--num_workers",
        "1",
        "--output_dir",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([out.display().to_string()])
    .collect()
}

pub fn run(args: &[String]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run_resnet starts")
}

pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// (iteration, value) of `metric` in a dllogger log, in file order.
pub fn series(log: &Path, metric: &str) -> Vec<(u64, f64)> {
    dllogger::open(log)
        .unwrap_or_else(|e| panic!("{}: {e}", log.display()))
        .filter_map(|r| r.get(metric).map(|v| (r.iteration.unwrap_or(0), v)))
        .collect()
}

pub fn log_of(out: &Path, model: &str) -> PathBuf {
    out.join(format!("{model}_log.json"))
}

/// The SDAA emulator install (target/sdaa-emulator, built by `make build`).
pub fn emulator_home() -> PathBuf {
    let home = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/sdaa-emulator");
    let plugin = home.join("lib64/libtorch_sdaa.so");
    assert!(
        plugin.is_file(),
        "SDAA emulator not built: {} is missing. Run `make build` (or scripts/build-emulator.sh) first.",
        plugin.display()
    );
    home.canonicalize().unwrap_or(home)
}
