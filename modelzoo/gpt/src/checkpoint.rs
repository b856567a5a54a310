//! GPT checkpoints are the engine's: `<output_dir>/checkpoints/step_NNNNNNNN.ckpt` (model
//! variables as `model/<name>`, optimizer state, counters; see `modelzoo_engine::checkpoint`),
//! plus `gpt_config.json` in the same directory (the `Model` section and the tokenizer path)
//! so generation can rebuild the network without the training config. Both are written
//! atomically. The layout is the zoo's for language models ([`modelzoo_text::checkpoint`]);
//! these are its GPT names.

use std::path::{Path, PathBuf};

use tch::nn::VarStore;

pub use modelzoo_text::checkpoint::{resolve, CheckpointError};

use crate::config::Model;

/// Architecture file name inside a checkpoint directory.
pub const META: &str = "gpt_config.json";

/// What generation needs besides the weights.
pub type Meta = modelzoo_text::checkpoint::Meta<Model>;

/// Writes `meta` as `dir/gpt_config.json` (creating `dir`).
pub fn write_meta(dir: &Path, meta: &Meta) -> Result<(), CheckpointError> {
    modelzoo_text::checkpoint::write_meta(dir, META, meta)
}

/// Saves `vs` as the engine checkpoint of `step` in `dir`, with `meta` beside it (what
/// training writes, without optimizer state); returns the checkpoint file.
pub fn save(dir: &Path, step: u64, vs: &VarStore, meta: &Meta) -> Result<PathBuf, CheckpointError> {
    modelzoo_text::checkpoint::save(dir, step, vs, META, meta)
}

/// Copies the `model/<name>` tensors of checkpoint `file` into `vs` (every variable must be
/// there with the same shape).
pub fn load_weights(vs: &VarStore, file: &Path) -> Result<(), CheckpointError> {
    modelzoo_text::checkpoint::load_weights(vs, file, "GPT", META)
}

/// Reads `gpt_config.json` from a checkpoint directory, if present.
pub fn read_meta(dir: &Path) -> Result<Option<Meta>, CheckpointError> {
    modelzoo_text::checkpoint::read_meta(dir, META)
}
