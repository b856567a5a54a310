//! Checkpoint files: one file per saved step holding the model's variables, the optimizer's
//! momentum buffers, the loss scaler and the loop counters, written atomically (temp file in
//! the same directory, fsync, rename) so a crash never leaves a half-written checkpoint; a
//! write that fails (disk full) is an error, never an abort. A checkpoint directory holds one
//! run: [`check_unused`] / [`check_continues`] refuse runs that would mix with another's,
//! [`prune`] never deletes later steps than the one just saved, [`read_newest`] passes over a
//! truncated newest checkpoint, and [`remove_stale_temp_files`] clears what killed saves left.
//!
//! RNG state is not stored: the engine reseeds the device generator from (seed, step) before
//! every step, and loaders derive their order and augmentation from (seed, epoch, index), so
//! the counters are enough to continue exactly where the run stopped.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use modelzoo_support::AtomicFile;
use tch::Tensor;

use crate::EngineError;

/// File-name prefix and extension of checkpoint files: `step_00000100.ckpt`.
const PREFIX: &str = "step_";
const EXT: &str = "ckpt";
/// Name prefix of the temp files a save writes before renaming them into place.
pub const TEMP_PREFIX: &str = ".ckpt-";

/// Loop position saved with a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    /// Optimizer steps done.
    pub step: u64,
    /// Epoch in progress (0-based).
    pub epoch: u64,
    /// Batches of `epoch` already consumed.
    pub batch_in_epoch: u64,
    /// Seed the run was started with.
    pub seed: u64,
}

impl Counters {
    fn to_tensor(self) -> Tensor {
        Tensor::from_slice(&[
            self.step as i64,
            self.epoch as i64,
            self.batch_in_epoch as i64,
            self.seed as i64,
        ])
    }

    fn from_tensor(t: &Tensor, path: &Path) -> Result<Counters, EngineError> {
        let v: Vec<i64> = Vec::try_from(t.flatten(0, -1)).map_err(|e| EngineError::Checkpoint {
            path: path.to_path_buf(),
            message: format!("bad counters: {e}"),
        })?;
        if v.len() != 4 || v.iter().any(|x| *x < 0) {
            return Err(EngineError::Checkpoint {
                path: path.to_path_buf(),
                message: format!("bad counters {v:?}"),
            });
        }
        Ok(Counters {
            step: v[0] as u64,
            epoch: v[1] as u64,
            batch_in_epoch: v[2] as u64,
            seed: v[3] as u64,
        })
    }
}

/// The path of the checkpoint for `step` in `dir`.
pub fn path_for(dir: &Path, step: u64) -> PathBuf {
    dir.join(format!("{PREFIX}{step:08}.{EXT}"))
}

/// Checkpoints in `dir`, oldest first.
pub fn list(dir: &Path) -> Result<Vec<(u64, PathBuf)>, EngineError> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(EngineError::Io {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    let mut found = Vec::new();
    for entry in rd.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if let Some(step) = name
            .strip_prefix(PREFIX)
            .and_then(|s| s.strip_suffix(&format!(".{EXT}")))
            .and_then(|s| s.parse::<u64>().ok())
        {
            found.push((step, entry.path()));
        }
    }
    found.sort();
    Ok(found)
}

/// The checkpoints `path` names, newest first: the file itself, or those of a checkpoint
/// directory, or those of a run's output directory (its `checkpoints/`).
fn candidates(path: &Path) -> Result<Vec<PathBuf>, EngineError> {
    if path.is_dir() {
        for dir in [path.to_path_buf(), path.join("checkpoints")] {
            let all = list(&dir)?;
            if !all.is_empty() {
                return Ok(all.into_iter().rev().map(|(_, p)| p).collect());
            }
        }
        return Err(EngineError::Checkpoint {
            path: path.to_path_buf(),
            message: format!(
                "no {PREFIX}*.{EXT} checkpoint in this directory or in its checkpoints/"
            ),
        });
    }
    if !path.exists() {
        return Err(EngineError::Checkpoint {
            path: path.to_path_buf(),
            message: "no such checkpoint file or directory".into(),
        });
    }
    // Refused here, before any run starts: a FIFO given as --resume would block the load.
    modelzoo_support::input::check_regular(path, "checkpoint").map_err(|e| {
        EngineError::Checkpoint {
            path: path.to_path_buf(),
            message: e.reason(),
        }
    })?;
    Ok(vec![path.to_path_buf()])
}

/// A checkpoint file itself, or the newest checkpoint in a checkpoint directory or in a run's
/// output directory (`<output_dir>/checkpoints/`).
pub fn resolve(path: &Path) -> Result<PathBuf, EngineError> {
    Ok(candidates(path)?.remove(0))
}

/// Write `named` tensors plus `counters` atomically to `path`: serialised into a temp file
/// (`.ckpt-XXXXXX`) in the same directory, fsynced, then renamed. A failed write (disk full,
/// quota, I/O error) is an error naming `path`; the temp file is removed and the checkpoint
/// that was at `path`, if any, is left as it was.
pub fn write(
    path: &Path,
    named: &[(String, Tensor)],
    counters: Counters,
) -> Result<(), EngineError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let io = |source| EngineError::Io {
        path: path.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut file = AtomicFile::with_temp_name(path, TEMP_PREFIX, "").map_err(io)?;
    let mut all: Vec<(String, Tensor)> = named
        .iter()
        .map(|(n, t)| (n.clone(), t.to_device(tch::Device::Cpu)))
        .collect();
    all.push(("meta/counters".into(), counters.to_tensor()));
    let failed = |e: std::io::Error| EngineError::Checkpoint {
        path: path.to_path_buf(),
        message: format!(
            "cannot write it: {e}; nothing was replaced (earlier checkpoints in {} are kept)",
            dir.display()
        ),
    };
    match serialise(&all, BufWriter::new(file.file_mut())) {
        Ok(()) => {}
        Err(SaveFailure::Write(e)) => return Err(failed(e)),
        Err(SaveFailure::Serialise(e)) => {
            return Err(EngineError::Checkpoint {
                path: path.to_path_buf(),
                message: format!("cannot serialise: {e}"),
            })
        }
    }
    file.commit().map_err(failed)
}

/// Why [`serialise`] failed.
#[derive(Debug)]
enum SaveFailure {
    /// libtorch could not serialise the tensors.
    Serialise(tch::TchError),
    /// Writing the bytes failed (disk full, I/O error).
    Write(std::io::Error),
}

/// Serialise `all` in libtorch's multi-tensor format into `out`, flushed. A failing `out` is
/// an error, never an abort (see [`Checked`]).
fn serialise<W: Write>(all: &[(String, Tensor)], out: W) -> Result<(), SaveFailure> {
    let mut w = Checked {
        inner: out,
        error: None,
    };
    Tensor::save_multi_to_stream(all, &mut w).map_err(SaveFailure::Serialise)?;
    let _ = w.flush();
    match w.error.take() {
        Some(e) => Err(SaveFailure::Write(e)),
        None => Ok(()),
    }
}

/// A writer for libtorch's serialiser that never fails: it forwards everything to `inner`
/// with `write_all` and keeps the first error instead of returning it. libtorch's zip writer
/// cannot survive a failed or short write — it throws from inside miniz's callback, where the
/// exception cannot unwind, and the process aborts (`c10::Error unexpected pos`, status 134)
/// — so it is always told that all was written, and [`write`] reports the kept error once
/// serialisation has returned.
struct Checked<W: Write> {
    inner: W,
    error: Option<std::io::Error>,
}

impl<W: Write> Write for Checked<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.error.is_none() {
            if let Err(e) = self.inner.write_all(buf) {
                self.error = Some(e);
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.error.is_none() {
            if let Err(e) = self.inner.flush() {
                self.error = Some(e);
            }
        }
        Ok(())
    }
}

/// libtorch's reason in one line: its messages carry a C++ backtrace (`Exception raised
/// from … frame #0: …`) and advice about miniz, which say nothing to a user naming a file.
fn libtorch_reason(e: &tch::TchError) -> String {
    let text = e.to_string();
    let first = text.lines().next().unwrap_or_default();
    let first = first
        .split(" This is an internal miniz error")
        .next()
        .unwrap_or(first);
    first
        .trim_start_matches("Internal torch error: ")
        .trim()
        .trim_end_matches('.')
        .to_string()
}

/// Read a checkpoint: its tensors (on the CPU) and counters. A file that is not one (another
/// format, truncated, a directory's stray file) is an error naming it and what was expected,
/// in one line.
pub fn read(path: &Path) -> Result<(Vec<(String, Tensor)>, Counters), EngineError> {
    if path.is_dir() {
        return Err(EngineError::Checkpoint {
            path: path.to_path_buf(),
            message: format!("is a directory; expected a {PREFIX}*.{EXT} checkpoint file"),
        });
    }
    // libtorch opens the file itself: a FIFO would block it where no signal can end the wait
    // (issue #38). A checkpoint may be GBs: the check is on the kind of file, not its size.
    modelzoo_support::input::check_regular(path, "checkpoint").map_err(|e| {
        EngineError::Checkpoint {
            path: path.to_path_buf(),
            message: e.reason(),
        }
    })?;
    let mut named = Tensor::load_multi(path).map_err(|e| EngineError::Checkpoint {
        path: path.to_path_buf(),
        message: format!(
            "not a checkpoint: expected a {PREFIX}*.{EXT} file written by a run_<model> (libtorch's archive of named tensors), but libtorch cannot read it ({})",
            libtorch_reason(&e)
        ),
    })?;
    let idx = named
        .iter()
        .position(|(n, _)| n == "meta/counters")
        .ok_or_else(|| EngineError::Checkpoint {
            path: path.to_path_buf(),
            message: "no meta/counters entry (not written by this engine?)".into(),
        })?;
    let (_, t) = named.remove(idx);
    let counters = Counters::from_tensor(&t, path)?;
    Ok((named, counters))
}

/// A checkpoint read by [`read_newest`].
#[derive(Debug)]
pub struct Loaded {
    /// The file read.
    pub file: PathBuf,
    pub named: Vec<(String, Tensor)>,
    pub counters: Counters,
    /// Newer checkpoints passed over because they could not be read (a save cut short by a
    /// crash or a full disk), with the reason.
    pub unreadable: Vec<(PathBuf, String)>,
}

/// Read the checkpoint `path` names ([`resolve`]). For a directory, a newest checkpoint that
/// cannot be read (truncated, corrupt) is passed over for the next newest, down to the newest
/// good one; the ones passed over are listed in [`Loaded::unreadable`]. A file named
/// explicitly is read as it is.
pub fn read_newest(path: &Path) -> Result<Loaded, EngineError> {
    let mut unreadable: Vec<(PathBuf, String)> = Vec::new();
    let mut first_error = None;
    for file in candidates(path)? {
        match read(&file) {
            Ok((named, counters)) => {
                return Ok(Loaded {
                    file,
                    named,
                    counters,
                    unreadable,
                })
            }
            Err(e) => {
                let why = match &e {
                    EngineError::Checkpoint { message, .. } => message.clone(),
                    other => other.to_string(),
                };
                unreadable.push((file, why));
                first_error.get_or_insert(e);
            }
        }
    }
    let Some(e) = first_error else {
        unreachable!("candidates() returns at least one path");
    };
    if unreadable.len() <= 1 {
        return Err(e);
    }
    Err(EngineError::Checkpoint {
        path: path.to_path_buf(),
        message: format!(
            "none of its {} checkpoints can be read; the newest: {e}",
            unreadable.len()
        ),
    })
}

/// Delete all but the newest `keep` checkpoints of steps up to `upto` (the step just saved)
/// in `dir`. Checkpoints of later steps are never this run's and are left alone.
pub fn prune(dir: &Path, keep: usize, upto: u64) -> Result<(), EngineError> {
    let mine: Vec<(u64, PathBuf)> = list(dir)?
        .into_iter()
        .filter(|(step, _)| *step <= upto)
        .collect();
    let excess = mine.len().saturating_sub(keep);
    for (_, p) in mine.into_iter().take(excess) {
        std::fs::remove_file(&p).map_err(|source| EngineError::Io { path: p, source })?;
    }
    Ok(())
}

/// Delete the temp files (`.ckpt-XXXXXX`) that saves cut short by a kill or a crash left in
/// `dir`; returns how many there were. Call it before this run saves anything.
pub fn remove_stale_temp_files(dir: &Path) -> Result<usize, EngineError> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(source) => {
            return Err(EngineError::Io {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    let mut n = 0;
    for entry in rd.flatten() {
        let stale = entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX)
            && entry.file_type().is_ok_and(|t| t.is_file());
        if stale {
            let p = entry.path();
            std::fs::remove_file(&p).map_err(|source| EngineError::Io { path: p, source })?;
            n += 1;
        }
    }
    if n > 0 {
        tracing::info!(
            "removed {n} temp file(s) {TEMP_PREFIX}* left in {} by an interrupted save",
            dir.display()
        );
    }
    Ok(n)
}

/// Refuse to start a run that does not resume in `dir` when `dir` already holds checkpoints:
/// the new run's checkpoints would be mixed with (and pruned against) the earlier run's.
pub fn check_unused(dir: &Path, resuming: bool) -> Result<(), EngineError> {
    if resuming {
        return Ok(());
    }
    let all = list(dir)?;
    let Some((_, newest)) = all.last() else {
        return Ok(());
    };
    Err(EngineError::CheckpointDirInUse {
        dir: dir.to_path_buf(),
        detail: format!(
            "already holds {} checkpoint(s) of an earlier run (newest {}); a new run would mix \
             with them. Continue that run with --resume {}, or start afresh in another \
             --output_dir (or delete the old checkpoints)",
            all.len(),
            file_name(newest),
            dir.display()
        ),
    })
}

/// Refuse to continue a run resumed from `from` (at `step`) in `dir` when `dir` holds
/// checkpoints that are not that run's history: any, when `from` lies elsewhere; later steps
/// than `step` otherwise — except the unreadable ones `read_newest` passed over, which this
/// run replaces.
pub fn check_continues(
    dir: &Path,
    from: &Path,
    step: u64,
    unreadable: &[PathBuf],
) -> Result<(), EngineError> {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let same_dir = from.parent().map(canon) == Some(canon(dir));
    let foreign: Vec<(u64, PathBuf)> = list(dir)?
        .into_iter()
        .filter(|(s, p)| !unreadable.contains(p) && (!same_dir || *s > step))
        .collect();
    let Some((_, newest)) = foreign.last() else {
        return Ok(());
    };
    let detail = if same_dir {
        format!(
            "holds checkpoints after step {step}, the one resumed from (newest {}); continuing \
             from an earlier checkpoint here would mix two runs. Resume from the newest \
             (--resume {}), or write this run into another --output_dir",
            file_name(newest),
            dir.display()
        )
    } else {
        format!(
            "already holds {} checkpoint(s) of another run (newest {}), and this run resumes \
             from {}; write it into another --output_dir",
            foreign.len(),
            file_name(newest),
            from.display()
        )
    };
    Err(EngineError::CheckpointDirInUse {
        dir: dir.to_path_buf(),
        detail,
    })
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_read_list_prune() {
        let dir = tempfile::tempdir().unwrap();
        for step in [3u64, 10, 7] {
            let c = Counters {
                step,
                epoch: 1,
                batch_in_epoch: 2,
                seed: 42,
            };
            write(
                &path_for(dir.path(), step),
                &[("w".into(), Tensor::from_slice(&[1.5f32, step as f32]))],
                c,
            )
            .unwrap();
        }
        let steps: Vec<u64> = list(dir.path())
            .unwrap()
            .into_iter()
            .map(|(s, _)| s)
            .collect();
        assert_eq!(steps, [3, 7, 10]);
        let newest = resolve(dir.path()).unwrap();
        let (named, c) = read(&newest).unwrap();
        assert_eq!(c.step, 10);
        assert_eq!(named[0].0, "w");
        assert_eq!(Vec::<f32>::try_from(&named[0].1).unwrap(), [1.5, 10.0]);
        prune(dir.path(), 1, 10).unwrap();
        assert_eq!(list(dir.path()).unwrap().len(), 1);
        // No temp files left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

        std::fs::write(dir.path().join("step_00000099.ckpt"), b"garbage").unwrap();
        let e = read(&resolve(dir.path()).unwrap()).unwrap_err();
        assert!(e.to_string().contains("step_00000099.ckpt"), "{e}");
        assert!(resolve(&dir.path().join("nope")).is_err());
    }

    /// Issue #28: reading a file that is not a checkpoint used to print libtorch's C++
    /// backtrace; the error is one line naming the file and what was expected.
    #[test]
    fn a_file_that_is_not_a_checkpoint_is_one_line_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in [
            ("text.ckpt", &b"hello\n"[..]),
            ("zipish.ckpt", &b"PK\x03\x04garbage"[..]),
            ("empty.ckpt", &b""[..]),
        ] {
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            let e = read(&p).unwrap_err().to_string();
            assert_eq!(e.lines().count(), 1, "{e}");
            assert!(
                e.contains(name) && e.contains("not a checkpoint") && e.contains("step_*.ckpt"),
                "{e}"
            );
            assert!(
                !e.contains("Exception raised") && !e.contains("frame #"),
                "{e}"
            );
        }
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("is a directory"), "{e}");
    }

    fn save(dir: &Path, step: u64) -> PathBuf {
        let p = path_for(dir, step);
        let c = Counters {
            step,
            ..Counters::default()
        };
        write(
            &p,
            &[("w".into(), Tensor::from_slice(&[step as f32; 64]))],
            c,
        )
        .unwrap();
        p
    }

    fn steps(dir: &Path) -> Vec<u64> {
        list(dir).unwrap().into_iter().map(|(s, _)| s).collect()
    }

    /// A sink that takes `room` bytes, then fails as a full disk does: a short write, then
    /// ENOSPC.
    struct Full {
        room: usize,
    }
    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.room == 0 {
                return Err(std::io::Error::from_raw_os_error(28));
            }
            let n = buf.len().min(self.room);
            self.room -= n;
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failing_write_is_an_error_not_an_abort() {
        let all = vec![("w".to_string(), Tensor::from_slice(&vec![1f32; 100_000]))];
        for room in [0, 100, 1000, 50_000, 399_000] {
            match serialise(&all, Full { room }) {
                Err(SaveFailure::Write(e)) => assert_eq!(e.raw_os_error(), Some(28), "{e}"),
                other => panic!("room {room}: {other:?}"),
            }
        }
        let mut room_enough = Vec::new();
        serialise(&all, &mut room_enough).unwrap();
        assert!(room_enough.len() > 400_000);
    }

    #[test]
    fn prune_keeps_what_this_run_wrote_and_never_touches_later_steps() {
        let dir = tempfile::tempdir().unwrap();
        for step in [1, 2, 3, 4, 5] {
            save(dir.path(), step);
        }
        // A run at step 2 in a directory holding steps 3..5 of another run: its step-2
        // checkpoint is the newest of its own, and stays.
        prune(dir.path(), 1, 2).unwrap();
        assert_eq!(steps(dir.path()), [2, 3, 4, 5]);
        prune(dir.path(), 2, 5).unwrap();
        assert_eq!(steps(dir.path()), [4, 5]);
    }

    #[test]
    fn stale_temp_files_are_removed_and_checkpoints_kept() {
        let dir = tempfile::tempdir().unwrap();
        save(dir.path(), 1);
        std::fs::write(dir.path().join(".ckpt-a1B2c3"), b"half a checkpoint").unwrap();
        std::fs::write(dir.path().join(".ckpt-zz9"), b"").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"mine").unwrap();
        assert_eq!(remove_stale_temp_files(dir.path()).unwrap(), 2);
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["notes.txt", "step_00000001.ckpt"]);
        assert_eq!(
            remove_stale_temp_files(&dir.path().join("nope")).unwrap(),
            0
        );
    }

    #[test]
    fn read_newest_falls_back_past_truncated_checkpoints_and_finds_checkpoints_dir() {
        let out = tempfile::tempdir().unwrap();
        let dir = out.path().join("checkpoints");
        for step in [1, 2, 3] {
            save(&dir, step);
        }
        for step in [2, 3] {
            let p = path_for(&dir, step);
            let bytes = std::fs::read(&p).unwrap();
            std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
        }
        // The run's output directory resolves to its checkpoints/.
        assert_eq!(resolve(out.path()).unwrap(), path_for(&dir, 3));
        let got = read_newest(out.path()).unwrap();
        assert_eq!(got.file, path_for(&dir, 1));
        assert_eq!(got.counters.step, 1);
        let passed: Vec<&PathBuf> = got.unreadable.iter().map(|(p, _)| p).collect();
        assert_eq!(passed, [&path_for(&dir, 3), &path_for(&dir, 2)]);
        // A file named explicitly is not replaced by another.
        let e = read_newest(&path_for(&dir, 3)).unwrap_err().to_string();
        assert!(e.contains("step_00000003.ckpt"), "{e}");
        // None readable: an error saying so.
        let p = path_for(&dir, 1);
        std::fs::write(&p, b"x").unwrap();
        let e = read_newest(&dir).unwrap_err().to_string();
        assert!(e.contains("none of its 3 checkpoints can be read"), "{e}");
        let empty = tempfile::tempdir().unwrap();
        let e = resolve(empty.path()).unwrap_err().to_string();
        assert!(e.contains("checkpoints/"), "{e}");
    }

    #[test]
    fn a_used_directory_is_refused_unless_the_run_continues_its_newest_checkpoint() {
        let fresh = tempfile::tempdir().unwrap();
        check_unused(fresh.path(), false).unwrap();
        check_unused(&fresh.path().join("absent"), false).unwrap();
        let dir = tempfile::tempdir().unwrap();
        for step in [3, 4, 5] {
            save(dir.path(), step);
        }
        let e = check_unused(dir.path(), false).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let t = e.to_string();
        assert!(
            t.contains("step_00000005.ckpt") && t.contains("--resume"),
            "{t}"
        );
        check_unused(dir.path(), true).unwrap();
        // Resuming from its newest checkpoint continues the run; from an older one, or from
        // another directory, would mix two runs.
        check_continues(dir.path(), &path_for(dir.path(), 5), 5, &[]).unwrap();
        let e = check_continues(dir.path(), &path_for(dir.path(), 3), 3, &[]).unwrap_err();
        assert!(e.to_string().contains("after step 3"), "{e}");
        let other = tempfile::tempdir().unwrap();
        let from = save(other.path(), 5);
        let e = check_continues(dir.path(), &from, 5, &[]).unwrap_err();
        assert!(e.to_string().contains("another run"), "{e}");
        check_continues(fresh.path(), &from, 5, &[]).unwrap();
        // Later checkpoints passed over as unreadable are replaced by this run.
        let later = vec![path_for(dir.path(), 5)];
        check_continues(dir.path(), &path_for(dir.path(), 4), 4, &later).unwrap();
    }
}
