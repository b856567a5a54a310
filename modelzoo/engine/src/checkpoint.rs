//! Checkpoint files: one file per saved step holding the model's variables, the optimizer's
//! momentum buffers, the loss scaler and the loop counters, written atomically (temp file in
//! the same directory, fsync, rename) so a crash never leaves a half-written checkpoint.
//!
//! RNG state is not stored: the engine reseeds the device generator from (seed, step) before
//! every step, and loaders derive their order and augmentation from (seed, epoch, index), so
//! the counters are enough to continue exactly where the run stopped.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use tch::Tensor;

use crate::EngineError;

/// File-name prefix and extension of checkpoint files: `step_00000100.ckpt`.
const PREFIX: &str = "step_";
const EXT: &str = "ckpt";

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

/// A checkpoint file itself, or the newest checkpoint in a directory.
pub fn resolve(path: &Path) -> Result<PathBuf, EngineError> {
    if path.is_dir() {
        let mut all = list(path)?;
        return all
            .pop()
            .map(|(_, p)| p)
            .ok_or_else(|| EngineError::Checkpoint {
                path: path.to_path_buf(),
                message: format!("no {PREFIX}*.{EXT} checkpoint in this directory"),
            });
    }
    if !path.exists() {
        return Err(EngineError::Checkpoint {
            path: path.to_path_buf(),
            message: "no such checkpoint file or directory".into(),
        });
    }
    Ok(path.to_path_buf())
}

/// Write `named` tensors plus `counters` atomically to `path`.
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
    let mut tmp = tempfile::Builder::new()
        .prefix(".ckpt-")
        .tempfile_in(dir)
        .map_err(io)?;
    let mut all: Vec<(String, Tensor)> = named
        .iter()
        .map(|(n, t)| (n.clone(), t.to_device(tch::Device::Cpu)))
        .collect();
    all.push(("meta/counters".into(), counters.to_tensor()));
    {
        let mut w = BufWriter::new(tmp.as_file_mut());
        Tensor::save_multi_to_stream(&all, &mut w).map_err(|e| EngineError::Checkpoint {
            path: path.to_path_buf(),
            message: format!("cannot serialise: {e}"),
        })?;
        w.flush().map_err(io)?;
    }
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Read a checkpoint: its tensors (on the CPU) and counters.
pub fn read(path: &Path) -> Result<(Vec<(String, Tensor)>, Counters), EngineError> {
    let mut named = Tensor::load_multi(path).map_err(|e| EngineError::Checkpoint {
        path: path.to_path_buf(),
        message: format!("not a readable checkpoint: {e}"),
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

/// Delete all but the newest `keep` checkpoints in `dir`.
pub fn prune(dir: &Path, keep: usize) -> Result<(), EngineError> {
    let all = list(dir)?;
    let excess = all.len().saturating_sub(keep);
    for (_, p) in all.into_iter().take(excess) {
        std::fs::remove_file(&p).map_err(|source| EngineError::Io { path: p, source })?;
    }
    Ok(())
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
        prune(dir.path(), 1).unwrap();
        assert_eq!(list(dir.path()).unwrap().len(), 1);
        // No temp files left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

        std::fs::write(dir.path().join("step_00000099.ckpt"), b"garbage").unwrap();
        let e = read(&resolve(dir.path()).unwrap()).unwrap_err();
        assert!(e.to_string().contains("step_00000099.ckpt"), "{e}");
        assert!(resolve(&dir.path().join("nope")).is_err());
    }
}
