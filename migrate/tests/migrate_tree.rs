//! The migration on a realistic CUDA model directory (DDP, AMP, apex, device strings, CUDA
//! kernels, cupy, triton): exact output, findings with file:line, skips, atomic idempotent
//! writes that keep file modes and never leave the directory.

use modelzoo_testkit::copy_dir;
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
            // `choices=["cpu", "cuda"]` is rewritten; `help="use torch.cuda.amp"` is prose and
            // is not.
            ("device-string", 6),
            ("import-torch-sdaa", 2),
            ("torch-cuda", 4),
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
    assert_eq!(migrate::write(&report).unwrap().files, 3);
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
        .filter(|n| n.starts_with(".tmp") || n.starts_with(migrate::TEMP_PREFIX))
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
    // A second --write changes no file and keeps the record.
    let before = std::fs::read_to_string(dir.join("MIGRATION.md")).unwrap();
    assert_eq!(migrate::write(&again).unwrap().files, 0);
    assert_eq!(
        std::fs::read_to_string(dir.join("MIGRATION.md")).unwrap(),
        before
    );
}

fn located(report: &migrate::Report) -> Vec<(String, usize, &'static str)> {
    report
        .findings
        .iter()
        .map(|f| (f.path.display().to_string(), f.line, f.rule))
        .collect()
}

#[test]
fn migration_md_keeps_what_needs_a_person_across_runs() {
    let (_tmp, dir) = model_copy();
    let first = migrate::scan(&dir).unwrap();
    let written = migrate::write(&first).unwrap();
    assert_eq!(written.record, dir.join("MIGRATION.md"));
    // Findings now point into the files as written: train.py gained `import torch_sdaa` at 7.
    let after = located(&written.report);
    assert_eq!(after.len(), first.findings.len());
    assert!(
        after.contains(&("train.py".into(), 27, "cudnn-flag")),
        "{after:?}"
    );
    assert!(
        after.contains(&("train.py".into(), 52, "torch-cuda-unsupported")),
        "{after:?}"
    );
    let lines: Vec<String> = std::fs::read_to_string(dir.join("train.py"))
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(lines[26].trim(), "cudnn.benchmark = True");
    assert!(lines[51].contains("torch.cuda.nvtx.range_push"));

    let md = std::fs::read_to_string(dir.join("MIGRATION.md")).unwrap();
    assert!(md.contains("## Files written (3)"), "{md}");
    assert!(md.contains("- `train.py`: lines 7, "), "{md}");
    assert!(
        md.contains("- `train_apex.py`: lines 3-4, 8-9, 12-13, 16-18 "),
        "{md}"
    );
    assert!(md.contains("## Needs a person (12)"), "{md}");
    assert!(md.contains("| `train.py:27` | `cudnn-flag` |"), "{md}");
    assert!(md.contains("| `train_apex.py:9` | `apex-amp` |"), "{md}");

    // Run again on the output: nothing to rewrite, and nothing forgotten — the autocast note
    // the apex rewrite left no trace of comes from the record.
    let again = migrate::scan(&dir).unwrap();
    assert!(again.changes.is_empty());
    assert_eq!(located(&again), after);
    let apex = again
        .findings
        .iter()
        .find(|f| f.rule == "apex-amp")
        .unwrap();
    assert!(apex.recorded);
    assert!(migrate::render_summary(&again).contains("(recorded in MIGRATION.md)"));
    migrate::write(&again).unwrap();
    assert_eq!(located(&migrate::scan(&dir).unwrap()), after);

    // A person handles it (the line changes, shifting the ones below): that finding goes,
    // the others follow their lines.
    let text = std::fs::read_to_string(dir.join("train_apex.py")).unwrap();
    std::fs::write(
        dir.join("train_apex.py"),
        text.replace(
            "    scaler = torch.sdaa.amp.GradScaler()\n",
            "    # autocast added below\n    scaler = torch.sdaa.amp.GradScaler(enabled=True)\n",
        ),
    )
    .unwrap();
    let fixed = migrate::scan(&dir).unwrap();
    let now = located(&fixed);
    assert!(!now.iter().any(|f| f.2 == "apex-amp"), "{now:?}");
    assert!(
        now.contains(&("train_apex.py".into(), 11, "apex-ddp")),
        "{now:?}"
    );
    assert_eq!(now.len(), after.len() - 1);
}

#[test]
fn someone_elses_migration_md_is_not_overwritten() {
    let (_tmp, dir) = model_copy();
    std::fs::write(dir.join("MIGRATION.md"), "# Our own notes\n").unwrap();
    let before = std::fs::read_to_string(dir.join("train.py")).unwrap();
    let report = migrate::scan(&dir).unwrap();
    let err = migrate::write(&report).unwrap_err();
    assert!(
        err.to_string().contains("not written by modelzoo migrate"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("train.py")).unwrap(),
        before
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("MIGRATION.md")).unwrap(),
        "# Our own notes\n"
    );
}

/// The record is an output path too: a FIFO (or a directory) named MIGRATION.md stops the
/// write before anything is written, saying what it is (issue #38 A1).
#[test]
fn a_migration_md_that_is_not_a_regular_file_stops_the_write() {
    let (_tmp, dir) = model_copy();
    mkfifo(&dir.join("MIGRATION.md"));
    let before = std::fs::read_to_string(dir.join("train.py")).unwrap();
    let report = migrate::scan(&dir).unwrap();
    let err = within_a_minute("write", move || {
        migrate::write(&report).unwrap_err().to_string()
    });
    assert!(
        err.contains("MIGRATION.md: cannot write the record there: it is a FIFO (named pipe)"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("train.py")).unwrap(),
        before
    );
}

#[test]
fn leftover_temp_files_of_a_killed_run_are_removed_by_the_next_write() {
    let (_tmp, dir) = model_copy();
    let leftover = dir
        .join("run_scripts")
        .join(format!("{}a1B2c3.tmp", migrate::TEMP_PREFIX));
    std::fs::write(&leftover, "half a file").unwrap();
    // Not ours: kept.
    std::fs::write(dir.join(".tmpXyZ123"), "someone else's").unwrap();
    let report = migrate::scan(&dir).unwrap();
    assert_eq!(
        report.leftover_temp,
        vec![PathBuf::from(format!(
            "run_scripts/{}a1B2c3.tmp",
            migrate::TEMP_PREFIX
        ))]
    );
    assert!(migrate::render_summary(&report).contains("1 leftover temp files"));
    assert!(leftover.exists(), "a dry run writes nothing");
    let written = migrate::write(&report).unwrap();
    assert_eq!(written.removed_temp, 1);
    assert!(!leftover.exists());
    assert!(dir.join(".tmpXyZ123").exists());
    assert!(migrate::scan(&dir).unwrap().leftover_temp.is_empty());
}

#[test]
fn file_names_with_newlines_and_spaces_make_a_patch_git_applies() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    std::fs::create_dir_all(&dir).unwrap();
    let odd = ["odd\nname.py", "with space.py", "quote\"d.py"];
    for name in odd {
        std::fs::write(dir.join(name), "import torch\nx = torch.zeros(1).cuda()\n").unwrap();
    }
    let report = migrate::scan(&dir).unwrap();
    let diff = migrate::render_diff(&report);
    assert!(
        diff.contains("--- \"a/odd\\nname.py\"\n+++ \"b/odd\\nname.py\"\n"),
        "{diff}"
    );
    assert!(diff.contains("--- a/with space.py\t\n"), "{diff}");
    assert!(diff.contains("--- \"a/quote\\\"d.py\"\n"), "{diff}");
    let summary = migrate::render_summary(&report);
    assert!(!summary.contains("odd\nname"), "{summary}");

    // `git apply -p1` from the directory gives exactly what --write gives.
    let patch = tmp.path().join("port.diff");
    std::fs::write(&patch, &diff).unwrap();
    let Ok(status) = std::process::Command::new("git")
        .args(["apply", "-p1", "--unsafe-paths"])
        .arg(&patch)
        .current_dir(&dir)
        .status()
    else {
        return; // no git here
    };
    assert!(status.success());
    for c in &report.changes {
        assert_eq!(std::fs::read_to_string(dir.join(&c.path)).unwrap(), c.new);
    }
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

/// Runs `f` on another thread and fails (rather than hanging the suite) if it has not returned
/// within a minute: what a read of a FIFO would do.
fn within_a_minute<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what} blocked: it opened a FIFO"))
}

fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    assert_eq!(rc, 0, "mkfifo {}", path.display());
}

#[test]
fn fifos_sockets_and_links_are_listed_as_skipped_never_opened() {
    let (tmp, dir) = model_copy();
    mkfifo(&dir.join("x.py"));
    mkfifo(&dir.join("run_scripts/launch.sh"));
    mkfifo(&dir.join("pipe.txt")); // not a name the migration reads: not listed
    let _socket = std::os::unix::net::UnixListener::bind(dir.join("sock.py")).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("elsewhere.py"), dir.join("linked.py")).unwrap();
    let scan_dir = dir.clone();
    let report = within_a_minute("scan", move || migrate::scan(&scan_dir).unwrap());
    let skipped: Vec<(String, &str)> = report
        .skipped
        .iter()
        .map(|s| (s.path.display().to_string(), s.reason.as_str()))
        .collect();
    let names: Vec<&str> = skipped.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        names,
        [
            "latin1.py",
            "linked.py",
            "run_scripts/launch.sh",
            "sock.py",
            "weights.py",
            "x.py"
        ]
    );
    let reason = |name: &str| skipped.iter().find(|(p, _)| p == name).unwrap().1;
    assert!(
        reason("x.py").starts_with("a FIFO (named pipe), not a regular file: not opened"),
        "{}",
        reason("x.py")
    );
    assert!(reason("x.py").contains("replace it with the regular file"));
    assert!(reason("run_scripts/launch.sh").starts_with("a FIFO"));
    assert!(reason("sock.py").starts_with("a socket, not a regular file"));
    assert!(reason("linked.py").starts_with("a symbolic link: not followed"));
    assert_eq!(report.files_scanned, 6);
    assert!(migrate::render_summary(&report).contains("6 files skipped:\n"));

    // The write and the record it keeps list them too, and the next run reads the record
    // without touching them.
    let written = within_a_minute("write", move || migrate::write(&report).map(|w| w.record));
    let record = std::fs::read_to_string(written.unwrap()).unwrap();
    assert!(
        record.contains("- `x.py`: a FIFO (named pipe), not a regular file"),
        "{record}"
    );
    let again = within_a_minute("second scan", move || migrate::scan(&dir).unwrap());
    assert_eq!(again.skipped.len(), 6);
}

#[test]
fn a_file_turned_into_a_fifo_after_the_scan_is_refused_not_read() {
    let (_tmp, dir) = model_copy();
    let report = migrate::scan(&dir).unwrap();
    std::fs::remove_file(dir.join("train.py")).unwrap();
    mkfifo(&dir.join("train.py"));
    let err = within_a_minute("write", move || migrate::write(&report).unwrap_err());
    let msg = err.to_string();
    assert!(msg.contains("train.py"), "{msg}");
    assert!(
        msg.contains("a FIFO (named pipe), not a regular file: not read"),
        "{msg}"
    );
    // Nothing was written: the check comes before any write.
    assert_eq!(
        std::fs::read_to_string(dir.join("train_apex.py")).unwrap(),
        std::fs::read_to_string(data().join("cuda_model/train_apex.py")).unwrap()
    );
}
