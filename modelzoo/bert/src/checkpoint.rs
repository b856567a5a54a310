//! run_bert's checkpoints are the engine's (`<output_dir>/checkpoints/step_NNNNNNNN.ckpt`:
//! variables as `model/<Hugging Face name>`, optimizer state, counters) plus
//! `bert_config.json` beside them: the architecture, the task and its labels, and the
//! tokenizer, so a fine-tuning run (`--pretrained <output_dir>`) or a reader knows what the
//! weights are. Written atomically, by the main rank, once the run owns the directory.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::{BertConfig, Task, Variant};

pub use modelzoo_text::checkpoint::CheckpointError;

/// File name of the description beside the checkpoints.
pub const META: &str = "bert_config.json";

/// What `bert_config.json` holds about the network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Description {
    pub model_name: Variant,
    #[serde(flatten)]
    pub task: Task,
    /// Hugging Face `BertConfig` keys.
    pub config: BertConfig,
    /// Class names by id (classification from named labels), else empty.
    #[serde(default)]
    pub label_names: Vec<String>,
}

/// `bert_config.json`: the description and the `--tokenizer` (`None`: the built-in one).
pub type Meta = modelzoo_text::checkpoint::Meta<Description>;

/// Writes `meta` as `dir/bert_config.json` (creating `dir`).
pub fn write_meta(dir: &Path, meta: &Meta) -> Result<(), CheckpointError> {
    modelzoo_text::checkpoint::write_meta(dir, META, meta)
}

/// Reads `bert_config.json` of a checkpoint directory, if there is one.
pub fn read_meta(dir: &Path) -> Result<Option<Meta>, CheckpointError> {
    modelzoo_text::checkpoint::read_meta(dir, META)
}

/// The checkpoint directory `--pretrained` names when it is a run_bert checkpoint (an output
/// directory, its `checkpoints/`, or a file in it).
pub fn meta_dir(pretrained: &Path) -> Option<PathBuf> {
    if pretrained.is_file() {
        return pretrained.parent().map(Path::to_path_buf);
    }
    [pretrained.join("checkpoints"), pretrained.to_path_buf()]
        .into_iter()
        .find(|d| d.join(META).is_file())
}
