//! Issue #28: `validate` on a 2 GB README held 4.2 GB (the file, then its text). Memory is
//! bounded whatever a file's size (docs/validate.md states the bound): a model directory whose
//! README, requirements.txt and run_scripts README are 1 GiB each, and whose zoo's model.yaml is
//! 1 GiB, is validated with the review on, in a child process whose address space is capped
//! (`ulimit -v`) at 96 MiB. Each oversized source file is a `fs.size` warning naming it; the
//! oversized index is an error naming it, never read. Reading any one of the files whole
//! would not fit under the cap.
//!
//! The files are sparse (`set_len`): they cost no disk. The child runs with one malloc arena
//! (`MALLOC_ARENA_MAX=1`) so the cap measures validate's memory, not glibc's per-thread
//! reservations.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use validator::layout::{Options, Validator};

const GIB: u64 = 1 << 30;
const LIMIT_KIB: u64 = 96 << 10;
const CHILD_TIMEOUT: Duration = Duration::from_secs(120);
const CHILD: &str = "MODELZOO_VALIDATE_MEMORY_CHILD";

/// A file of `len` bytes that starts with `head` and continues with zeros (sparse).
fn huge(path: &Path, head: &str, len: u64) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, head).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

#[test]
fn gigabyte_files_are_validated_in_bounded_memory() {
    let t = tempfile::tempdir().unwrap();
    let zoo = t.path().join("PyTorch");
    let model = zoo.join("contrib/Classification/Huge");
    huge(&model.join("README.md"), "# Huge\n## 1. 模型概述\n", GIB);
    huge(&model.join("requirements.txt"), "numpy\n", GIB);
    huge(&model.join("run_scripts/README.md"), "# run_scripts\n", GIB);
    std::fs::write(model.join("run_scripts/run_huge.py"), "import argparse\n").unwrap();
    huge(
        &zoo.join("contrib/model_config/model.yaml"),
        "models:\n",
        GIB,
    );

    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {LIMIT_KIB} && exec \"$0\" \"$@\""))
        .arg(&exe)
        .args([
            "--exact",
            "child_validates_the_directory",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, &model)
        .env("MALLOC_ARENA_MAX", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > CHILD_TIMEOUT {
            let _ = child.kill();
            panic!("validate under a cap of {LIMIT_KIB} KiB ran past {CHILD_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "validate did not fit in {LIMIT_KIB} KiB of address space ({}):\n{stdout}\n{stderr}",
        out.status
    );
    for file in ["README.md", "requirements.txt", "run_scripts/README.md"] {
        let path = model.join(file);
        assert!(
            stdout.contains(&format!("{}: fs.size", path.display())),
            "no fs.size finding for {file}:\n{stdout}"
        );
    }
    assert!(
        stdout.contains("model.yaml") && stdout.contains("larger than"),
        "the 1 GiB model.yaml is not named as too large:\n{stdout}"
    );
}

/// The child of the test above (does nothing unless started by it): validates the directory
/// with the review on and prints each finding, or the error.
#[test]
fn child_validates_the_directory() {
    let Some(dir) = std::env::var_os(CHILD) else {
        return;
    };
    let mut validator = Validator::new(&Options::default())
        .unwrap()
        .with_review(true);
    match validator.check_dir(Path::new(&dir)) {
        Ok(report) => {
            for f in &report.findings {
                println!("{}: {}: {}", f.path.display(), f.rule, f.message);
            }
        }
        Err(e) => println!("error: {e}"),
    }
}
