//! `modelzoo migrate` end to end: the real binary on a copy of the CUDA test model.

use std::path::{Path, PathBuf};
use std::process::Command;

fn model_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrate/tests/data/cuda_model")
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let to = dst.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), &to).unwrap();
        }
    }
}

fn modelzoo(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_modelzoo"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn dry_run_prints_diff_and_summary_then_write_applies_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("model");
    copy_dir(&model_src(), &dir);
    let original = std::fs::read_to_string(dir.join("train.py")).unwrap();
    let report = tmp.path().join("report.md");
    let (code, stdout, stderr) = modelzoo(&[
        "migrate",
        dir.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("+++ b/train.py"), "{stdout}");
    assert!(
        stdout.contains("+    torch.sdaa.set_device(local_rank)"),
        "{stdout}"
    );
    assert!(
        stderr.contains("6 files scanned, 3 to change, 26 rewrites"),
        "{stderr}"
    );
    assert!(
        stderr.contains("train.py:51: [torch-cuda-unsupported]"),
        "{stderr}"
    );
    assert!(stderr.contains("--write"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.join("train.py")).unwrap(),
        original
    );
    let md = std::fs::read_to_string(&report).unwrap();
    assert!(
        md.contains("| `csrc/fused_kernel.cu:3` | `cuda-source` |"),
        "{md}"
    );

    let (code, stdout, stderr) = modelzoo(&["migrate", dir.to_str().unwrap(), "--write"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("wrote 3 files"), "{stderr}");
    let expected =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrate/tests/data/expected/train.py");
    assert_eq!(
        std::fs::read_to_string(dir.join("train.py")).unwrap(),
        std::fs::read_to_string(expected).unwrap()
    );

    let json = tmp.path().join("again.json");
    let (code, stdout, stderr) = modelzoo(&[
        "migrate",
        dir.to_str().unwrap(),
        "--report",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.is_empty(),
        "second run must change nothing: {stdout}"
    );
    assert!(
        stderr.contains("6 files scanned, 0 to change, 0 rewrites"),
        "{stderr}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["changes"].as_array().unwrap().len(), 0);
}

#[test]
fn list_rules_and_errors() {
    let (code, stdout, _) = modelzoo(&["migrate", "--list-rules"]);
    assert_eq!(code, 0);
    for id in [
        "import-torch-sdaa",
        "cuda-method",
        "ddp-backend",
        "apex-amp",
        "cudnn-flag",
    ] {
        assert!(stdout.contains(id), "{stdout}");
    }
    let (code, _, stderr) = modelzoo(&["migrate", "/nonexistent/model"]);
    assert_eq!(code, 2);
    assert!(stderr.starts_with("error: /nonexistent/model"), "{stderr}");
    let (code, _, stderr) = modelzoo(&["migrate"]);
    assert_eq!(code, 2, "{stderr}");
}
