//! The files a GPT checkpoint directory holds: `model.safetensors` (the `VarStore`) and
//! `gpt_config.json` (the `Model` section and the tokenizer path) so generation can rebuild
//! the network without the training config. Both are written atomically.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tch::nn::VarStore;

use crate::config::Model;

/// Weights file name inside a checkpoint directory.
pub const WEIGHTS: &str = "model.safetensors";
/// Architecture file name inside a checkpoint directory.
pub const META: &str = "gpt_config.json";

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Bad { path: PathBuf, message: String },
    #[error("{}: no {META} beside the weights; pass the training config with -c so the architecture is known", dir.display())]
    NoMeta { dir: PathBuf },
}

/// What generation needs besides the weights.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub model: Model,
    /// The `tokenizer.json` used in training; `None` = byte-level.
    pub tokenizer: Option<PathBuf>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes `bytes` to `path` atomically (temp file in the same directory, fsync, rename).
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io(dir))?;
    tmp.write_all(bytes).map_err(io(path))?;
    tmp.as_file().sync_all().map_err(io(path))?;
    tmp.persist(path).map_err(|e| CheckpointError::Io {
        path: path.to_path_buf(),
        source: e.error,
    })?;
    Ok(())
}

/// Saves `vs` and `meta` into `dir` (created if needed).
pub fn save(dir: &Path, vs: &VarStore, meta: &Meta) -> Result<(), CheckpointError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let weights = dir.join(WEIGHTS);
    let tmp = tempfile::Builder::new()
        .prefix(".model-")
        .suffix(".safetensors")
        .tempfile_in(dir)
        .map_err(io(dir))?;
    vs.save(tmp.path()).map_err(|e| CheckpointError::Bad {
        path: weights.clone(),
        message: e.to_string(),
    })?;
    std::fs::File::open(tmp.path())
        .and_then(|f| f.sync_all())
        .map_err(io(&weights))?;
    tmp.persist(&weights).map_err(|e| CheckpointError::Io {
        path: weights.clone(),
        source: e.error,
    })?;
    let json = serde_json::to_vec_pretty(meta).map_err(|e| CheckpointError::Bad {
        path: dir.join(META),
        message: e.to_string(),
    })?;
    write_atomic(&dir.join(META), &json)
}

/// Resolves `--ckpt`: a checkpoint directory, a run's output directory (newest checkpoint
/// below it), or a weights file; returns (weights file, its directory).
pub fn resolve(ckpt: &Path) -> Result<(PathBuf, PathBuf), CheckpointError> {
    if ckpt.is_file() {
        let dir = ckpt.parent().unwrap_or(Path::new(".")).to_path_buf();
        return Ok((ckpt.to_path_buf(), dir));
    }
    if ckpt.join(WEIGHTS).is_file() {
        return Ok((ckpt.join(WEIGHTS), ckpt.to_path_buf()));
    }
    // An output dir: the most recently written checkpoint directory inside it.
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    for entry in std::fs::read_dir(ckpt).map_err(io(ckpt))? {
        let path = entry.map_err(io(ckpt))?.path();
        let w = path.join(WEIGHTS);
        if let Ok(m) = std::fs::metadata(&w).and_then(|m| m.modified()) {
            if best.as_ref().is_none_or(|(t, _)| m > *t) {
                best = Some((m, path));
            }
        }
    }
    match best {
        Some((_, dir)) => Ok((dir.join(WEIGHTS), dir)),
        None => Err(CheckpointError::Bad {
            path: ckpt.to_path_buf(),
            message: format!("no {WEIGHTS} here or in any subdirectory; pass a training run's --output_dir or a checkpoint file"),
        }),
    }
}

/// Reads `gpt_config.json` from a checkpoint directory, if present.
pub fn read_meta(dir: &Path) -> Result<Option<Meta>, CheckpointError> {
    let path = dir.join(META);
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path).map_err(io(&path))?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| CheckpointError::Bad {
            path,
            message: e.to_string(),
        })
}
