//! What the shared config needs of a model's own architecture section (`Model`).

use modelzoo_engine::runner::MemoryNeed;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{Data, Unsupported};

/// The architecture section (`Model`) of a decoder language model: what the shared config needs
/// of it. Everything else about a GPT or LLaMA config is common ([`LmConfig`]).
pub trait ModelSection: Default + Clone + PartialEq + Serialize + DeserializeOwned {
    /// The training program, for messages (`run_gpt`).
    const PROGRAM: &'static str;
    /// What a run without `-c` trains, for messages (`the built-in GPT-2 small (124M)`).
    const DEFAULTS: &'static str;
    /// A complete config to point users at (`modelzoo/gpt/configs/gpt_124m.yaml`).
    const EXAMPLE: &'static str;
    /// The architecture keys a training config must give (`Model.<key>`, not empty): a file
    /// without one would build the default shape for it without a word.
    const REQUIRED_KEYS: &'static [&'static str];
    /// The `Model.module` training builds (`GPTModule`).
    const TRAINING_MODULE: &'static str;
    /// Rejects shapes that cannot build and options the model does not implement.
    fn validate(&self) -> Result<(), Unsupported>;
    /// `Model.module` as written.
    fn module(&self) -> Option<&str>;
    /// The longest sequence the architecture takes (`Data.dataset.max_seq_len` is checked
    /// against it, and so is a generation's prompt plus `max_dec_len`).
    fn max_position_embeddings(&self) -> i64;
    /// Logits per position.
    fn vocab_size(&self) -> i64;
    /// Parameters (saturating, for sizing shapes too large to build).
    fn parameters(&self) -> u64;
    /// Values the KV cache keeps per position of one sequence: keys and values of every
    /// layer (saturating).
    fn kv_values_per_position(&self) -> u64;
    /// At most the fp32 values one cached forward (eval, no grad) of `new` positions for
    /// `batch` sequences holds at once beyond the weights and the cache it starts from
    /// (saturating): every tensor of its widest layer as if all were alive together, the
    /// attention scores as the math path materialises them, the layer's grown keys and values
    /// (the concatenation holds old and new), the embeddings and the logits. What
    /// `generate::check_request` sizes a generation's activations by.
    fn forward_values(&self, batch: u64, new: u64, past: u64) -> u64;
    /// The least memory one training step with micro-batches of `micro` needs at `data`'s
    /// sequence length (see `runner::check_memory`), from exact sizes of what it must hold.
    fn memory_need(&self, data: &Data, micro: u64, amp: bool) -> MemoryNeed;
}
