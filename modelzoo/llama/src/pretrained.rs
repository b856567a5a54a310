//! Hugging Face weights: a `LlamaForCausalLM` state dict saved as safetensors
//! (`model.safetensors`, or `safetensors.torch.save_file(model.state_dict())`) loads into a
//! [`crate::Llama`] by parameter name, so users can train or generate from published LLaMA
//! weights. Every variable must be there with the model's shape; names the model does not
//! have are refused (another architecture), except the rotary `inv_freq` buffers older
//! checkpoints carry and a tied model's `lm_head.weight` (the embedding, which Hugging Face
//! drops when saving tied weights).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tch::nn::VarStore;
use tch::Tensor;

/// A state dict that does not fit the model.
#[derive(Debug, thiserror::Error)]
pub enum PretrainedError {
    #[error("{}: cannot read safetensors: {message}; give a Hugging Face model.safetensors (sharded checkpoints: merge the shards first)", path.display())]
    Read { path: PathBuf, message: String },
    #[error("{}: missing `{key}` ({count} tensors in the file, e.g. `{example}`): not a LlamaForCausalLM state dict with this config's num_layers / tie_word_embeddings?", path.display())]
    Missing {
        path: PathBuf,
        key: String,
        count: usize,
        example: String,
    },
    #[error("{}: `{key}` has shape {file:?}, the model of the -c config expects {model:?}: set the Model section to the checkpoint's architecture (hidden_size, num_key_value_heads, ffn_hidden_size, vocab_size)", path.display())]
    Shape {
        path: PathBuf,
        key: String,
        file: Vec<i64>,
        model: Vec<i64>,
    },
    #[error("{}: `{key}` is not a parameter of this LLaMA ({extra} unexpected tensors): another architecture (biases, a different layer count)?", path.display())]
    Unexpected {
        path: PathBuf,
        key: String,
        extra: usize,
    },
}

/// Copies the tensors of `path` into `vs` by name (converted to each variable's dtype).
/// `tied`: the model ties `lm_head` to the embedding.
pub fn load(vs: &VarStore, path: &Path, tied: bool) -> Result<(), PretrainedError> {
    let named = Tensor::read_safetensors(path).map_err(|e| PretrainedError::Read {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let mut file: BTreeMap<String, Tensor> = named.into_iter().collect();
    file.retain(|k, _| !(k.ends_with("rotary_emb.inv_freq") || (tied && k == "lm_head.weight")));
    let (count, example) = (file.len(), file.keys().next().cloned().unwrap_or_default());
    let vars = vs.variables();
    let mut names: Vec<&String> = vars.keys().collect();
    names.sort();
    for name in names {
        let src = file.remove(name).ok_or_else(|| PretrainedError::Missing {
            path: path.to_path_buf(),
            key: name.clone(),
            count,
            example: example.clone(),
        })?;
        let mut var = vars[name].shallow_clone();
        if src.size() != var.size() {
            return Err(PretrainedError::Shape {
                path: path.to_path_buf(),
                key: name.clone(),
                file: src.size(),
                model: var.size(),
            });
        }
        tch::no_grad(|| var.copy_(&src.to_kind(var.kind())));
    }
    if let Some(key) = file.keys().next() {
        return Err(PretrainedError::Unexpected {
            path: path.to_path_buf(),
            key: key.clone(),
            extra: file.len(),
        });
    }
    Ok(())
}
