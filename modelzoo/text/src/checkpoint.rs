//! Checkpoints of the zoo's decoder language models are the engine's:
//! `<output_dir>/checkpoints/step_NNNNNNNN.ckpt` (model variables as `model/<name>`, optimizer
//! state, counters; see `modelzoo_engine::checkpoint`), plus a JSON file beside them (the
//! model's `Model` section and the tokenizer path, e.g. run_gpt's `gpt_config.json`) so
//! `--generate` can rebuild the network without the training config. Both are written
//! atomically. Shared by run_gpt and run_llama; each names its own meta file.

use std::path::{Path, PathBuf};

use modelzoo_engine::checkpoint::{self as engine_ckpt, Counters};
use modelzoo_engine::EngineError;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tch::nn::VarStore;
use tch::Tensor;

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
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("{}: no {file} beside the weights; pass the training config with -c so the architecture is known", dir.display())]
    NoMeta { dir: PathBuf, file: &'static str },
}

/// What generation needs besides the weights; `M` is the model's `Model` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta<M> {
    pub model: M,
    /// The `tokenizer.json` used in training; `None` = byte-level.
    pub tokenizer: Option<PathBuf>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes `bytes` to `path` atomically (see `modelzoo_support::AtomicFile`).
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    // The engine's temp-file prefix, so a run after a killed one cleans this up too.
    modelzoo_support::AtomicFile::with_temp_name(path, engine_ckpt::TEMP_PREFIX, "")
        .map_err(io(dir))?
        .write_and_commit(bytes)
        .map_err(io(path))
}

/// Writes `meta` as `dir/<file>` (creating `dir`).
pub fn write_meta<M: Serialize>(
    dir: &Path,
    file: &str,
    meta: &Meta<M>,
) -> Result<(), CheckpointError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let json = serde_json::to_vec_pretty(meta).map_err(|e| CheckpointError::Bad {
        path: dir.join(file),
        message: e.to_string(),
    })?;
    write_atomic(&dir.join(file), &json)
}

/// Saves `vs` as the engine checkpoint of `step` in `dir`, with `meta` beside it as `file`
/// (what training writes, without optimizer state); returns the checkpoint file.
pub fn save<M: Serialize>(
    dir: &Path,
    step: u64,
    vs: &VarStore,
    file: &str,
    meta: &Meta<M>,
) -> Result<PathBuf, CheckpointError> {
    let mut named: Vec<(String, Tensor)> = vs
        .variables()
        .into_iter()
        .map(|(n, t)| (format!("model/{n}"), t))
        .collect();
    named.sort_by(|a, b| a.0.cmp(&b.0));
    let path = engine_ckpt::path_for(dir, step);
    engine_ckpt::write(
        &path,
        &named,
        Counters {
            step,
            ..Counters::default()
        },
    )?;
    write_meta(dir, file, meta)?;
    Ok(path)
}

/// Resolves `--ckpt`: a checkpoint file, a checkpoint directory (its newest checkpoint), or a
/// training run's `--output_dir` (the newest in its `checkpoints/`); returns (checkpoint file,
/// its directory).
pub fn resolve(ckpt: &Path) -> Result<(PathBuf, PathBuf), CheckpointError> {
    if ckpt.is_file() {
        let dir = ckpt.parent().unwrap_or(Path::new(".")).to_path_buf();
        return Ok((ckpt.to_path_buf(), dir));
    }
    if !ckpt.is_dir() {
        return Err(CheckpointError::Bad {
            path: ckpt.to_path_buf(),
            message: "no such checkpoint file or directory".into(),
        });
    }
    for dir in [ckpt.to_path_buf(), ckpt.join("checkpoints")] {
        if let Some((_, file)) = engine_ckpt::list(&dir)?.pop() {
            return Ok((file, dir));
        }
    }
    Err(CheckpointError::Bad {
        path: ckpt.to_path_buf(),
        message: "no step_*.ckpt here or in checkpoints/; pass a training run's --output_dir, \
                  its checkpoints directory or a checkpoint file"
            .into(),
    })
}

/// Copies the `model/<name>` tensors of checkpoint `file` into `vs` (every variable must be
/// there with the same shape). `model` ("GPT") and `meta_file` name what the messages blame.
pub fn load_weights(
    vs: &VarStore,
    file: &Path,
    model: &str,
    meta_file: &str,
) -> Result<(), CheckpointError> {
    let (named, _) = engine_ckpt::read(file)?;
    let map: std::collections::HashMap<String, Tensor> = named.into_iter().collect();
    let bad = |message: String| CheckpointError::Bad {
        path: file.to_path_buf(),
        message,
    };
    for (name, mut var) in vs.variables() {
        let key = format!("model/{name}");
        let src = map
            .get(&key)
            .ok_or_else(|| bad(format!("missing {key}: not a checkpoint of this {model}")))?;
        if src.size() != var.size() {
            return Err(bad(format!(
                "{key} has shape {:?}, the model described by {meta_file} expects {:?}",
                src.size(),
                var.size()
            )));
        }
        tch::no_grad(|| var.copy_(src));
    }
    Ok(())
}

/// Reads `dir/<file>` (the meta JSON) from a checkpoint directory, if present.
pub fn read_meta<M: DeserializeOwned>(
    dir: &Path,
    file: &str,
) -> Result<Option<Meta<M>>, CheckpointError> {
    let path = dir.join(file);
    if !path.is_file() {
        return Ok(None);
    }
    // Regular and at most 16 MiB (the meta is a few hundred bytes): never blocks, never huge.
    let text = modelzoo_support::input::read_to_string_bounded(&path, 16 << 20, "checkpoint meta")
        .map_err(|e| io(&path)(e.into_io_reason()))?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| CheckpointError::Bad {
            path,
            message: e.to_string(),
        })
}
