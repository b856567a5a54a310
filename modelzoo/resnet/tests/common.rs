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

#[allow(unused_imports)] // each test binary uses its own part of this module
pub use modelzoo_testkit::{emulator_home, output_text as text, series};

pub fn log_of(out: &Path, model: &str) -> PathBuf {
    out.join(format!("{model}_log.json"))
}
