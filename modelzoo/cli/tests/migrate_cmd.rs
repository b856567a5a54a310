//! `modelzoo migrate` end to end: the real binary on a copy of the CUDA test model.

use modelzoo_testkit::copy_dir;
use std::path::{Path, PathBuf};
use std::process::Command;

fn model_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrate/tests/data/cuda_model")
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
    assert!(stderr.contains("MIGRATION.md"), "{stderr}");
    let record = std::fs::read_to_string(dir.join("MIGRATION.md")).unwrap();
    assert!(
        record.contains("| `train.py:52` | `torch-cuda-unsupported` |"),
        "{record}"
    );
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
    // Nothing was fixed, so nothing that needs a person is forgotten (MIGRATION.md is read
    // back); the lines are those of the written files (train.py gained `import torch_sdaa`).
    assert!(stderr.contains("12 findings need a look"), "{stderr}");
    assert!(
        stderr.contains("train.py:52: [torch-cuda-unsupported]"),
        "{stderr}"
    );
    assert!(
        stderr.contains("train_apex.py:9: [apex-amp]")
            && stderr.contains("(recorded in MIGRATION.md)"),
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

/// A write that fails part way (here: the file-size limit, the same failed `write` a full disk
/// gives, and it holds for root too) says how many files were rewritten and that a re-run
/// completes — and the re-run does.
#[test]
fn write_stopped_part_way_says_how_far_it_got_and_a_rerun_completes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("model");
    std::fs::create_dir_all(&dir).unwrap();
    let small = "import torch\nx = torch.zeros(1).cuda()\n";
    std::fs::write(dir.join("a.py"), small).unwrap();
    let big = format!(
        "import torch\nx = torch.zeros(1).cuda()\n{}",
        "# padding\n".repeat(3000)
    );
    std::fs::write(dir.join("b_big.py"), &big).unwrap();
    std::fs::write(dir.join("c.py"), small).unwrap();

    let out = Command::new("bash")
        .args([
            "-c",
            "trap '' XFSZ; ulimit -f 4 && exec \"$0\" \"$@\"",
            env!("CARGO_BIN_EXE_modelzoo"),
            "migrate",
            dir.to_str().unwrap(),
            "--write",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("b_big.py: cannot write it"), "{stderr}");
    assert!(
        stderr
            .contains("1 of 3 files were rewritten before this (a.py); the other 2 are unchanged"),
        "{stderr}"
    );
    assert!(stderr.contains("the re-run completes the rest"), "{stderr}");
    assert!(
        !stderr.contains(migrate::TEMP_PREFIX),
        "names only a temp file: {stderr}"
    );
    assert!(std::fs::read_to_string(dir.join("a.py"))
        .unwrap()
        .contains(".sdaa()"));
    assert_eq!(std::fs::read_to_string(dir.join("b_big.py")).unwrap(), big);
    assert_eq!(std::fs::read_to_string(dir.join("c.py")).unwrap(), small);
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(migrate::TEMP_PREFIX))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    let (code, _, stderr) = modelzoo(&["migrate", dir.to_str().unwrap(), "--write"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("wrote 2 files"), "{stderr}");
    for f in ["a.py", "b_big.py", "c.py"] {
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(
            text.starts_with(&format!(
                "import torch\n{}\nx = torch.zeros(1).sdaa()\n",
                migrate::SDAA_IMPORT
            )),
            "{f}"
        );
    }
    // The record lists the file written by the first run too.
    let record = std::fs::read_to_string(dir.join("MIGRATION.md")).unwrap();
    assert!(record.contains("## Files written (3)"), "{record}");
}

/// `--report` names a path the tool writes, so it is checked before anything is read or
/// written (issue #38 A1): a directory, a FIFO, a device, a symbolic link, one of the sources
/// being migrated (also through a hard link), `<DIR>/MIGRATION.md` or a path in a directory
/// that does not exist stops the run with exit 2 naming it, and the `--write` writes nothing.
#[test]
fn report_path_must_be_a_regular_file_that_is_not_an_input() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("model");
    std::fs::create_dir_all(&dir).unwrap();
    let src = "import torch\nx = torch.zeros(1).cuda()\n";
    std::fs::write(dir.join("a.py"), src).unwrap();
    let fifo = tmp.path().join("report.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let link = tmp.path().join("link.md");
    std::os::unix::fs::symlink(tmp.path().join("elsewhere.md"), &link).unwrap();
    let hard = tmp.path().join("hard.md");
    std::fs::hard_link(dir.join("a.py"), &hard).unwrap();
    let cases: Vec<(PathBuf, &str)> = vec![
        (tmp.path().to_path_buf(), "it is a directory"),
        (fifo, "it is a FIFO (named pipe), not a regular file"),
        (PathBuf::from("/dev/null"), "it is a character device"),
        (link, "it is a symbolic link"),
        (
            dir.join("a.py"),
            "it is a.py, one of the files being migrated",
        ),
        (hard, "it is a.py, one of the files being migrated"),
        (dir.join("MIGRATION.md"), "it is the migration's own record"),
        (
            tmp.path().join("no/such/dir/report.md"),
            "does not exist; create it",
        ),
    ];
    for (report, why) in cases {
        let (code, stdout, stderr) = modelzoo(&[
            "migrate",
            dir.to_str().unwrap(),
            "--write",
            "--report",
            report.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{}: {stderr}", report.display());
        assert!(
            stderr.contains(&format!(
                "error: {}: cannot write the report there: ",
                report.display()
            )) && stderr.contains(why),
            "{}: {stderr}",
            report.display()
        );
        assert!(stdout.is_empty(), "{stdout}");
        assert_eq!(std::fs::read_to_string(dir.join("a.py")).unwrap(), src);
        assert!(!dir.join("MIGRATION.md").exists());
    }
    // A regular file is replaced (atomically), and an absent one created.
    let old = tmp.path().join("old.md");
    std::fs::write(&old, "stale").unwrap();
    for report in [old, tmp.path().join("new.json")] {
        let (code, _, stderr) = modelzoo(&[
            "migrate",
            dir.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{stderr}");
        let text = std::fs::read_to_string(&report).unwrap();
        assert!(text.contains("a.py"), "{text}");
    }
}
