//! Helpers shared by the run_vit integration tests: run the real binary, read its log.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[allow(unused_imports)] // each test binary uses its own part of this module
pub use modelzoo_testkit::{emulator_home, output_text as text, series, venv_python};

pub const BIN: &str = env!("CARGO_BIN_EXE_run_vit");

/// The arguments of a small, quick synthetic run: `vit_tiny` (patch 8, hidden 64, 2 layers) on
/// 32 px images of 10 classes.
pub fn small(out: &Path) -> Vec<String> {
    [
        "--model_name",
        "vit_tiny",
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

/// `base` followed by `extra`.
pub fn with(mut base: Vec<String>, extra: &[&str]) -> Vec<String> {
    base.extend(extra.iter().map(|s| s.to_string()));
    base
}

/// `args` with the value of `--name` replaced by `value`.
pub fn set(mut args: Vec<String>, name: &str, value: &str) -> Vec<String> {
    let i = args
        .iter()
        .position(|a| a == name)
        .unwrap_or_else(|| panic!("{name} not in {args:?}"));
    args[i + 1] = value.to_string();
    args
}

pub fn run(args: &[String]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run_vit starts")
}

pub fn log_of(out: &Path, model: &str) -> PathBuf {
    out.join(format!("{model}_log.json"))
}

/// Run tests/vit_reference.py with `args`; panics with its output when it fails.
pub fn reference(args: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vit_reference.py");
    let o = Command::new(venv_python())
        .args(["-W", "ignore"])
        .arg(&script)
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run .venv/bin/python");
    assert!(
        o.status.success(),
        "vit_reference.py {args:?}: {}",
        text(&o)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}
