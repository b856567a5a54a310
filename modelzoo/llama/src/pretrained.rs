//! Hugging Face weights: a `LlamaForCausalLM` state dict saved as safetensors
//! (`model.safetensors`, or `safetensors.torch.save_file(model.state_dict())`) loads into a
//! [`crate::Llama`] by parameter name, so users can train or generate from published LLaMA
//! weights. Every variable must be there with the model's shape; names the model does not
//! have are refused (another architecture), except the rotary `inv_freq` buffers older
//! checkpoints carry and a tied model's `lm_head.weight` (the embedding, which Hugging Face
//! drops when saving tied weights).

use std::path::Path;

use modelzoo_engine::state_dict::{load_safetensors, StateDictError};
use tch::nn::VarStore;

/// Why Hugging Face weights did not load.
pub type PretrainedError = StateDictError;

/// Copies every variable of `vs` (a [`crate::Llama`] built with `tied` embeddings) from the
/// Hugging Face state dict at `path`, by name, strictly (see [`load_safetensors`]). Returns the
/// number of tensors loaded.
pub fn load(vs: &VarStore, path: &Path, tied: bool) -> Result<usize, PretrainedError> {
    load_safetensors(
        vs,
        path,
        &|k| k.ends_with("rotary_emb.inv_freq") || (tied && k == "lm_head.weight"),
        "give a LlamaForCausalLM model.safetensors (sharded checkpoints: merge the shards first) whose architecture is the -c config's Model section (num_layers, hidden_size, num_key_value_heads, ffn_hidden_size, vocab_size, tie_word_embeddings)",
    )
}
