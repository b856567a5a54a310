//! What `run_gpt` training leaves behind (issue #13, item 4): a second run into a used
//! `--output_dir` is refused with everything kept, `--resume <output_dir>` continues it, and a
//! resume with another `--step` says whether the schedule changes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_run_gpt");

fn tiny() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/gpt_tiny.yaml")
}

fn run(out: &Path, extra: &[&str]) -> Output {
    let cfg = tiny();
    Command::new(BIN)
        .args([
            "-c",
            cfg.to_str().unwrap(),
            "-o",
            "Engine.logging_freq=1",
            "-o",
            "Engine.eval_iters=1",
            "--output_dir",
            out.to_str().unwrap(),
        ])
        .args(extra)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run_gpt starts")
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn iterations(out: &Path) -> Vec<u64> {
    let log = out.join("gpt_log.json");
    dllogger::open(&log)
        .unwrap_or_else(|e| panic!("{}: {e}", log.display()))
        .filter(|r| r.get("train.loss").is_some())
        .map(|r| r.iteration.unwrap_or(0))
        .collect()
}

#[test]
fn a_second_run_into_a_used_output_dir_is_refused_and_resume_output_dir_continues_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = run(&out, &["--step", "2"]);
    assert!(o.status.success(), "{}", text(&o));
    let log = std::fs::read(out.join("gpt_log.json")).unwrap();
    let meta = std::fs::read(out.join("checkpoints/gpt_config.json")).unwrap();

    let o = run(&out, &["--step", "3", "-o", "Model.hidden_size=32"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("step_00000002.ckpt") && t.contains("--resume"),
        "{t}"
    );
    assert_eq!(std::fs::read(out.join("gpt_log.json")).unwrap(), log);
    assert_eq!(
        std::fs::read(out.join("checkpoints/gpt_config.json")).unwrap(),
        meta,
        "the checkpoints' architecture file is not replaced"
    );

    let o = run(&out, &["--step", "3", "--resume", out.to_str().unwrap()]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert_eq!(iterations(&out), [1, 2, 3]);
    // FleetX's schedule is fixed by decay_steps: the warning says the LR is unaffected.
    assert!(
        t.contains("trained toward a 2-step schedule, this run's is 3 steps")
            && t.contains("does not depend on the run's length"),
        "{t}"
    );
    assert!(out.join("checkpoints/step_00000003.ckpt").is_file());
}

/// Issue #38 C9: `-c` or `-o Data.dataset.tokenizer=` naming a FIFO hung run_gpt. Both are
/// refused at once: exit 2 naming the file. Under `timeout`, so a regression fails.
#[test]
fn a_fifo_as_config_or_tokenizer_exits_2_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let fifo = fifo.to_str().unwrap();
    let cfg = tiny();
    let tokenizer = format!("Data.dataset.tokenizer={fifo}");
    for args in [
        vec!["-c", fifo],
        vec!["-c", cfg.to_str().unwrap(), "-o", &tokenizer],
    ] {
        let o = Command::new("timeout")
            .arg("60")
            .arg(BIN)
            .args(&args)
            .arg("--output_dir")
            .arg(dir.path().join("out"))
            .output()
            .unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        assert!(t.contains(fifo) && t.contains("a FIFO"), "{args:?}: {t}");
    }
}
