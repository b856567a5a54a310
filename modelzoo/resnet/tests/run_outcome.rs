//! What a run reports and what it leaves on disk (issue #13, item 4): a new run never mixes
//! with an earlier run's checkpoints, a failed save is an error that keeps the metric log, zero
//! steps trained is exit 2, `--resume <output_dir>` passes over a truncated newest checkpoint
//! and cleans up temp files of killed saves, and a resume that changes the schedule says so.

mod common;

use common::{log_of, run, series, small, text, BIN};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn with(mut base: Vec<String>, extra: &[&str]) -> Vec<String> {
    base.extend(extra.iter().map(|s| s.to_string()));
    base
}

/// A short synthetic run into `out` (16 batches of 16 per epoch, a loss every step).
fn quick(out: &Path, extra: &[&str]) -> Vec<String> {
    with(
        with(
            small(out),
            &[
                "--synthetic_samples",
                "256",
                "--bs",
                "16",
                "--logging_freq",
                "1",
                "-o",
                "Engine.logging_freq=1",
            ],
        ),
        extra,
    )
}

/// Checkpoint steps in `<out>/checkpoints`, ascending.
fn ckpt_steps(out: &Path) -> Vec<u64> {
    let mut steps: Vec<u64> = std::fs::read_dir(out.join("checkpoints"))
        .map(|rd| {
            rd.filter_map(|e| {
                let n = e.ok()?.file_name().to_string_lossy().into_owned();
                n.strip_prefix("step_")?.strip_suffix(".ckpt")?.parse().ok()
            })
            .collect()
        })
        .unwrap_or_default();
    steps.sort();
    steps
}

/// Names in `<out>/checkpoints` starting with `.ckpt-` (temp files of saves).
fn temp_files(out: &Path) -> Vec<String> {
    std::fs::read_dir(out.join("checkpoints"))
        .map(|rd| {
            rd.filter_map(|e| {
                let n = e.ok()?.file_name().to_string_lossy().into_owned();
                n.starts_with(".ckpt-").then_some(n)
            })
            .collect()
        })
        .unwrap_or_default()
}

fn ckpt(out: &Path, step: u64) -> PathBuf {
    out.join(format!("checkpoints/step_{step:08}.ckpt"))
}

fn losses(out: &Path) -> Vec<(u64, f64)> {
    series(&log_of(out, "resnet18"), "train.loss")
}

#[test]
fn a_new_run_into_a_used_output_dir_is_refused_and_the_earlier_run_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = run(&quick(
        &out,
        &["--step", "5", "-o", "Engine.save_load.save_steps=1"],
    ));
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(ckpt_steps(&out), [3, 4, 5], "newest 3 kept");
    let log_before = std::fs::read(log_of(&out, "resnet18")).unwrap();
    let ckpt_before = std::fs::read(ckpt(&out, 5)).unwrap();

    // Today: "checkpoint step_00000002.ckpt" is logged, then pruned against the old run's
    // steps 3..5 — the new run's own checkpoint is deleted, and the old log truncated.
    let o = run(&quick(
        &out,
        &["--step", "2", "-o", "Engine.save_load.save_steps=1"],
    ));
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("already holds 3 checkpoint(s) of an earlier run")
            && t.contains("step_00000005.ckpt")
            && t.contains("--resume"),
        "{t}"
    );
    assert_eq!(ckpt_steps(&out), [3, 4, 5]);
    assert_eq!(std::fs::read(ckpt(&out, 5)).unwrap(), ckpt_before);
    assert_eq!(
        std::fs::read(log_of(&out, "resnet18")).unwrap(),
        log_before,
        "the earlier run's metric log is untouched"
    );

    // Continuing that run is what --resume is for: its checkpoints and log go on.
    let o = run(&quick(
        &out,
        &[
            "--step",
            "7",
            "-o",
            "Engine.save_load.save_steps=1",
            "--resume",
            &out.display().to_string(),
        ],
    ));
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(ckpt_steps(&out), [5, 6, 7]);
    let iters: Vec<u64> = losses(&out).iter().map(|l| l.0).collect();
    assert_eq!(iters, [1, 2, 3, 4, 5, 6, 7]);

    // Resuming from an older checkpoint of this directory would interleave two runs.
    let o = run(&quick(
        &out,
        &[
            "--step",
            "7",
            "--resume",
            &ckpt(&out, 5).display().to_string(),
        ],
    ));
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("after step 5"), "{t}");
    assert_eq!(ckpt_steps(&out), [5, 6, 7]);
}

#[test]
fn resume_from_the_output_dir_passes_over_a_truncated_checkpoint_and_cleans_temp_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let args = quick(
        &out,
        &["--step", "5", "-o", "Engine.save_load.save_steps=1"],
    );
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o));
    let straight = losses(&out);
    assert_eq!(straight.len(), 5);

    // A save killed mid-write (the step-5 file cut in half) and a killed save's temp file.
    let newest = ckpt(&out, 5);
    let bytes = std::fs::read(&newest).unwrap();
    std::fs::write(&newest, &bytes[..bytes.len() / 2]).unwrap();
    std::fs::write(out.join("checkpoints/.ckpt-Ab12Cd"), &bytes[..1000]).unwrap();

    // `--resume <output_dir>`, as the docs say (its checkpoints/ is found).
    let o = run(&with(
        args.clone(),
        &["--resume", &out.display().to_string()],
    ));
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("step_00000005.ckpt cannot be read")
            && t.contains("falling back to")
            && t.contains("step_00000004.ckpt"),
        "{t}"
    );
    // Said in the run's log too, not only on stderr.
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("WARNING: checkpoint"),
        "{t}"
    );
    assert!(temp_files(&out).is_empty(), "{:?}", temp_files(&out));
    // Step 5 trained again from step 4: the same loss, and a readable step-5 checkpoint.
    let all = losses(&out);
    assert_eq!(all.len(), 6, "{all:?}");
    assert_eq!(all[5], straight[4]);
    assert_eq!(ckpt_steps(&out), [3, 4, 5]);
    let (_, counters) = modelzoo_engine::checkpoint::read(&newest).unwrap();
    assert_eq!(counters.step, 5);

    // A fresh run into a directory holding only temp files cleans them up as well.
    let fresh = dir.path().join("fresh");
    std::fs::create_dir_all(fresh.join("checkpoints")).unwrap();
    std::fs::write(fresh.join("checkpoints/.ckpt-zz9"), b"junk").unwrap();
    let o = run(&quick(&fresh, &["--step", "1"]));
    assert!(o.status.success(), "{}", text(&o));
    assert!(temp_files(&fresh).is_empty(), "{:?}", temp_files(&fresh));
    assert_eq!(ckpt_steps(&fresh), [1]);
}

#[test]
fn a_resume_that_changes_the_schedule_length_warns_and_a_finished_run_has_nothing_to_train() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        dir.path().join("a"),
        dir.path().join("b"),
        dir.path().join("c"),
    );
    let o = run(&quick(
        &a,
        &["--step", "8", "-o", "Engine.save_load.save_steps=4"],
    ));
    assert!(o.status.success(), "{}", text(&o));
    // Same schedule (8 steps), resumed at 4: no warning.
    let o = run(&quick(
        &b,
        &[
            "--step",
            "8",
            "--resume",
            &ckpt(&a, 4).display().to_string(),
        ],
    ));
    assert!(o.status.success(), "{}", text(&o));
    assert!(!text(&o).contains("schedule"), "{}", text(&o));
    assert_eq!(losses(&b), losses(&a)[4..].to_vec());

    // A 4-step run resumed to 8: its schedule was fixed by --step 4, so losses differ from
    // the straight 8-step run's — said on stderr and in the log.
    let o = run(&quick(&c, &["--step", "4"]));
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&quick(
        &c,
        &["--step", "8", "--resume", &c.display().to_string()],
    ));
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("WARN")
            && stderr.contains("trained toward a 4-step schedule, this run's is 8 steps")
            && stderr.contains("will not match an uninterrupted 8-step run"),
        "{t}"
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("WARNING: resuming at step 4"),
        "{t}"
    );
    let json = std::fs::read_to_string(log_of(&c, "resnet18")).unwrap();
    assert!(
        json.lines()
            .any(|l| l.starts_with("INFO ") && l.contains("4-step schedule")),
        "{json}"
    );
    assert_ne!(losses(&c)[4..].to_vec(), losses(&a)[4..].to_vec());

    // Resuming a run that already reached its last step trains nothing: not a success, and
    // (issue #28) the refused run writes nothing into the log it would have continued.
    let log_before = std::fs::read(log_of(&c, "resnet18")).unwrap();
    let o = run(&quick(
        &c,
        &["--step", "8", "--resume", &c.display().to_string()],
    ));
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("nothing to train") && !t.contains("done,"),
        "{t}"
    );
    assert!(t.contains("raise --step"), "--step ends this schedule: {t}");
    assert_eq!(
        std::fs::read(log_of(&c, "resnet18")).unwrap(),
        log_before,
        "the refused resume appended to the earlier run's log"
    );
}

/// Issue #28: "nothing to train" named --step even when the epochs end the schedule.
#[test]
fn a_resume_at_the_end_of_an_epoch_schedule_says_to_raise_the_epochs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("e");
    let o = run(&quick(&out, &["--epoch", "1"]));
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&quick(
        &out,
        &["--epoch", "1", "--resume", &out.display().to_string()],
    ));
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("raise --epoch"), "{t}");
}

/// Issue #28: `--synthetic_samples 100000000000000` aborted (rc 134) while the loader built its
/// sample order; the memory check now refuses it before anything is allocated.
#[test]
fn an_absurd_synthetic_set_is_refused_before_anything_is_allocated() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("big");
    let o = run(&with(
        small(&out),
        &["--synthetic_samples", "100000000000000", "--step", "1"],
    ));
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("--synthetic_samples 100000000000000"), "{t}");
    assert!(!log_of(&out, "resnet18").exists(), "{t}");
}

/// Issue #28: an ImageFolder whose val/ images are all corrupt ended rc 0 with val.loss NaN.
#[test]
fn a_validation_set_that_yields_nothing_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("imgs");
    for (class, color) in [("red", [200u8, 20, 20]), ("blue", [20u8, 20, 200])] {
        let train = root.join("train").join(class);
        let val = root.join("val").join(class);
        std::fs::create_dir_all(&train).unwrap();
        std::fs::create_dir_all(&val).unwrap();
        for i in 0..4 {
            write_png(&train.join(format!("{i}.png")), color);
            std::fs::write(val.join(format!("bad{i}.png")), b"not a png").unwrap();
        }
    }
    let out = dir.path().join("out");
    let o = run(&with(
        small(&out),
        &["--dataset_path", &root.display().to_string(), "--bs", "4"],
    ));
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("validation evaluated nothing") && t.contains("8 skipped reads"),
        "{t}"
    );
    assert!(!t.contains("val.loss : nan"), "{t}");
}

fn write_png(path: &Path, color: [u8; 3]) {
    image::RgbImage::from_fn(36, 36, |x, y| {
        let v = ((x * y) % 5) as u8 * 8;
        image::Rgb([
            color[0].saturating_add(v),
            color[1].saturating_add(v),
            color[2].saturating_add(v),
        ])
    })
    .save(path)
    .unwrap();
}

#[test]
fn every_training_image_corrupt_is_exit_2_naming_the_data_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("imgs");
    for (class, color) in [("red", [200u8, 20, 20]), ("blue", [20u8, 20, 200])] {
        let train = root.join("train").join(class);
        let val = root.join("val").join(class);
        std::fs::create_dir_all(&train).unwrap();
        std::fs::create_dir_all(&val).unwrap();
        for i in 0..4 {
            std::fs::write(train.join(format!("bad{i}.png")), b"not a png").unwrap();
            write_png(&val.join(format!("{i}.png")), color);
        }
    }
    let out = dir.path().join("out");
    let o = run(&with(
        small(&out),
        &[
            "--dataset_path",
            &root.display().to_string(),
            "--bs",
            "4",
            "--epoch",
            "2",
        ],
    ));
    let t = text(&o);
    // Today: "run_resnet: done, 0 steps", exit 0.
    assert_eq!(o.status.code(), Some(2), "{t}");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("done,"), "{t}");
    assert!(
        stderr.contains("no training step was done")
            && stderr.contains(&root.display().to_string())
            && stderr.contains("16 skipped reads")
            && stderr.contains("bad"),
        "{t}"
    );
    assert!(ckpt_steps(&out).is_empty(), "no step-0 checkpoint");
}

/// The run's training part: 2 steps, checkpoint at the end (about 90 MB for resnet18 with
/// momentum), losses logged every step.
fn save_fails_args(out: &Path) -> Vec<String> {
    quick(out, &["--step", "2"])
}

/// A failed save: exit 1 (not an abort), the checkpoint path and the OS error named, the
/// metric log written through to the failure, no temp file left.
fn assert_failed_save(o: &Output, out: &Path, os_error: &str) {
    let t = text(o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains(&ckpt(out, 2).display().to_string()) && stderr.contains(os_error),
        "{t}"
    );
    assert!(
        !stderr.contains("panicked") && !stderr.contains("c10::Error"),
        "{t}"
    );
    let iters: Vec<u64> = losses(out).iter().map(|l| l.0).collect();
    assert_eq!(iters, [1, 2], "the metric log keeps what was logged\n{t}");
    assert!(temp_files(out).is_empty(), "{:?}", temp_files(out));
    assert!(ckpt_steps(out).is_empty());
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
#[test]
fn a_checkpoint_save_that_hits_the_file_size_limit_is_an_error_and_keeps_the_log() {
    use std::os::unix::process::CommandExt;

    #[repr(C)]
    struct RLimit {
        cur: u64,
        max: u64,
    }
    extern "C" {
        fn setrlimit(resource: i32, rlim: *const RLimit) -> i32;
        fn signal(sig: i32, handler: usize) -> usize;
    }
    const RLIMIT_FSIZE: i32 = 1;
    const SIGXFSZ: i32 = 25;
    const SIG_IGN: usize = 1;

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut cmd = Command::new(BIN);
    cmd.args(save_fails_args(&out)).env("RUST_LOG", "warn");
    // SAFETY: only async-signal-safe calls between fork and exec. Files may grow to 4 MiB:
    // the metric log fits, the checkpoint does not; with SIGXFSZ ignored (kept across exec)
    // the write past the limit fails with EFBIG, as a full disk fails with ENOSPC.
    unsafe {
        cmd.pre_exec(|| {
            let lim = RLimit {
                cur: 4 << 20,
                max: 4 << 20,
            };
            if setrlimit(RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            signal(SIGXFSZ, SIG_IGN);
            Ok(())
        });
    }
    let o = cmd.output().expect("run_resnet starts");
    // Today: libtorch aborts (status 134, `c10::Error unexpected pos`) with the log empty.
    assert_failed_save(&o, &out, "File too large");
}

/// A tmpfs of 4 MiB mounted on `path` while this lives (root only).
struct TinyDisk(PathBuf);

impl TinyDisk {
    fn mount(path: &Path) -> Result<TinyDisk, String> {
        std::fs::create_dir_all(path).map_err(|e| e.to_string())?;
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
            .arg(path)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !o.status.success() {
            return Err(String::from_utf8_lossy(&o.stderr).trim().to_string());
        }
        Ok(TinyDisk(path.to_path_buf()))
    }
}

impl Drop for TinyDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_checkpoint_save_on_a_full_disk_is_an_error_and_keeps_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let _disk = match TinyDisk::mount(&out) {
        Ok(d) => d,
        Err(why) => {
            println!("skipped: cannot mount a 4 MiB tmpfs here ({why}); the file-size-limit test covers the failing save");
            return;
        }
    };
    let o = run(&save_fails_args(&out));
    assert_failed_save(&o, &out, "No space left on device");
}

/// Issue #38 B6: a run whose evaluation loss is NaN exited 0 with `val.loss NaN` ("done").
/// A learning rate of 1e30 keeps step 1's training loss finite (computed before the update)
/// and sends the weights to inf: the final evaluation is NaN. The run must fail (non-zero,
/// the reason on stderr) with the evaluation still in the metric log.
#[test]
fn a_nan_validation_loss_fails_the_run_and_keeps_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = run(&with(
        small(&out),
        &[
            "--synthetic_samples",
            "64",
            "--bs",
            "16",
            "--step",
            "1",
            "--lr",
            "1e30",
        ],
    ));
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("validation loss became non-finite (NaN) at step 1") && !t.contains("done,"),
        "{t}"
    );
    let val = series(&log_of(&out, "resnet18"), "val.loss");
    assert_eq!(val.len(), 1, "{val:?}");
    assert!(val[0].1.is_nan(), "{val:?}");
    assert_eq!(losses(&out).len(), 1, "the training loss stays in the log");
}
