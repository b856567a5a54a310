//! The migration on a realistic CUDA model directory (DDP, AMP, apex, device strings, CUDA
//! kernels, cupy, triton): exact output, findings with file:line, skips, atomic idempotent
//! writes that keep file modes and never leave the directory.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// A copy of the CUDA model in a temp dir, plus what must be skipped (kept out of git).
fn model_copy() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("cuda_model");
    copy_dir(&data().join("cuda_model"), &dst);
    std::fs::set_permissions(
        dst.join("run_scripts/train.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::create_dir_all(dst.join("env/lib")).unwrap();
    std::fs::write(dst.join("env/pyvenv.cfg"), "home = /usr/bin\n").unwrap();
    std::fs::write(dst.join("env/lib/site.py"), "x.cuda()\n").unwrap();
    std::fs::create_dir_all(dst.join("__pycache__")).unwrap();
    std::fs::write(dst.join("__pycache__/train.py"), "y.cuda()\n").unwrap();
    std::fs::create_dir_all(dst.join(".git")).unwrap();
    std::fs::write(dst.join(".git/hook.py"), "z.cuda()\n").unwrap();
    std::fs::write(
        dst.join("latin1.py"),
        b"import torch\n# caf\xe9\nx = torch.zeros(1).cuda()\n",
    )
    .unwrap();
    std::fs::write(dst.join("weights.py"), b"\x00\x01binary.cuda(").unwrap();
    (tmp, dst)
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

const CHANGED: &[&str] = &["run_scripts/train.sh", "train.py", "train_apex.py"];

fn expected(rel: &str) -> String {
    std::fs::read_to_string(data().join("expected").join(rel)).unwrap()
}

#[test]
fn dry_run_produces_the_exact_sdaa_port_and_touches_nothing() {
    let (_tmp, dir) = model_copy();
    let before = std::fs::read(dir.join("train.py")).unwrap();
    let report = migrate::scan(&dir).unwrap();
    if std::env::var_os("MIGRATE_BLESS").is_some() {
        for c in &report.changes {
            let to = data().join("expected").join(&c.path);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::write(to, &c.new).unwrap();
        }
    }
    let changed: Vec<String> = report
        .changes
        .iter()
        .map(|c| c.path.display().to_string())
        .collect();
    assert_eq!(changed, CHANGED);
    for c in &report.changes {
        assert_eq!(
            c.new,
            expected(&c.path.display().to_string()),
            "{}",
            c.path.display()
        );
    }
    // train.py, train_apex.py, kernels.py, utils.py, train.sh, fused_kernel.cu — not the
    // virtualenv, __pycache__ or .git copies, not the skipped files.
    assert_eq!(report.files_scanned, 6);
    let counts: Vec<(&str, usize)> = report.rule_counts.iter().map(|(r, n)| (*r, *n)).collect();
    assert_eq!(
        counts,
        vec![
            ("apex-amp", 4),
            ("apex-ddp", 1),
            ("cuda-method", 5),
            ("ddp-backend", 2),
            ("device-string", 5),
            ("import-torch-sdaa", 2),
            ("torch-cuda", 5),
            ("visible-devices", 2),
        ]
    );
    assert_eq!(
        std::fs::read(dir.join("train.py")).unwrap(),
        before,
        "dry run wrote"
    );

    let diff = migrate::render_diff(&report);
    assert!(diff.contains("--- a/train.py\n+++ b/train.py\n"), "{diff}");
    assert!(
        diff.contains("\n-    torch.cuda.set_device(local_rank)\n"),
        "{diff}"
    );
    assert!(
        diff.contains("\n+    torch.sdaa.set_device(local_rank)\n"),
        "{diff}"
    );
}

#[test]
fn findings_locate_what_needs_a_person() {
    let (_tmp, dir) = model_copy();
    let report = migrate::scan(&dir).unwrap();
    let found: Vec<(String, usize, &str)> = report
        .findings
        .iter()
        .map(|f| (f.path.display().to_string(), f.line, f.rule))
        .collect();
    let want: Vec<(String, usize, &str)> = [
        ("csrc/fused_kernel.cu", 3, "cuda-source"),
        ("kernels.py", 1, "cupy"),
        ("kernels.py", 2, "triton"),
        ("kernels.py", 3, "triton"),
        ("kernels.py", 6, "cpp-extension-cuda"),
        ("kernels.py", 9, "triton"),
        ("train.py", 26, "cudnn-flag"),
        ("train.py", 27, "cudnn-flag"),
        ("train.py", 51, "torch-cuda-unsupported"),
        ("train.py", 54, "torch-cuda-unsupported"),
        ("train_apex.py", 9, "apex-amp"),
        ("train_apex.py", 10, "apex-ddp"),
    ]
    .iter()
    .map(|(p, l, r)| (p.to_string(), *l, *r))
    .collect();
    assert_eq!(found, want);
    let skipped: Vec<String> = report
        .skipped
        .iter()
        .map(|s| format!("{}: {}", s.path.display(), s.reason))
        .collect();
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert!(
        skipped[0].starts_with("latin1.py: not UTF-8"),
        "{skipped:?}"
    );
    assert!(skipped[1].starts_with("weights.py: binary"), "{skipped:?}");

    let md = migrate::render_markdown(&report);
    assert!(
        md.contains("| `train.py:51` | `torch-cuda-unsupported` |"),
        "{md}"
    );
    assert!(md.contains("| 6 | 3 | 26 | 12 | 2 |"), "{md}");
    let json: serde_json::Value = serde_json::from_str(&migrate::render_json(&report)).unwrap();
    assert_eq!(json["files_scanned"], 6);
    assert_eq!(json["findings"].as_array().unwrap().len(), 12);
}

#[test]
fn write_is_atomic_keeps_modes_and_is_idempotent() {
    let (_tmp, dir) = model_copy();
    let latin1 = std::fs::read(dir.join("latin1.py")).unwrap();
    std::fs::set_permissions(dir.join("train.py"), std::fs::Permissions::from_mode(0o640)).unwrap();
    let report = migrate::scan(&dir).unwrap();
    assert_eq!(migrate::write(&report).unwrap(), 3);
    for rel in CHANGED {
        assert_eq!(
            std::fs::read_to_string(dir.join(rel)).unwrap(),
            expected(rel),
            "{rel}"
        );
    }
    let mode = std::fs::metadata(dir.join("run_scripts/train.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    let mode = std::fs::metadata(dir.join("train.py"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o640);
    // No temp files left behind, untouched files untouched.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tmp"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
    assert_eq!(std::fs::read(dir.join("latin1.py")).unwrap(), latin1);
    assert_eq!(
        std::fs::read_to_string(dir.join("env/lib/site.py")).unwrap(),
        "x.cuda()\n"
    );

    let again = migrate::scan(&dir).unwrap();
    assert!(again.changes.is_empty(), "{}", migrate::render_diff(&again));
    assert_eq!(again.rule_counts.values().sum::<usize>(), 0);
}

#[test]
fn write_refuses_files_changed_since_the_scan() {
    let (_tmp, dir) = model_copy();
    let report = migrate::scan(&dir).unwrap();
    std::fs::write(dir.join("train.py"), "edited meanwhile\n").unwrap();
    let err = migrate::write(&report).unwrap_err();
    assert!(err.to_string().contains("changed on disk"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.join("train.py")).unwrap(),
        "edited meanwhile\n"
    );
}

#[test]
fn symlinks_out_of_the_directory_are_not_followed() {
    let (tmp, dir) = model_copy();
    let outside = tmp.path().join("outside.py");
    std::fs::write(&outside, "import torch\nx = torch.zeros(1).cuda()\n").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("linked.py")).unwrap();
    std::os::unix::fs::symlink(tmp.path(), dir.join("linked_dir")).unwrap();
    let report = migrate::scan(&dir).unwrap();
    assert!(report
        .changes
        .iter()
        .all(|c| !c.path.starts_with("linked.py") && !c.path.starts_with("linked_dir")));
    migrate::write(&report).unwrap();
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "import torch\nx = torch.zeros(1).cuda()\n"
    );
}

#[test]
fn not_a_directory_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("train.py");
    std::fs::write(&file, "x").unwrap();
    let err = migrate::scan(&file).unwrap_err();
    assert!(err.to_string().contains("not a directory"), "{err}");
    let err = migrate::scan(&tmp.path().join("missing")).unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
}
