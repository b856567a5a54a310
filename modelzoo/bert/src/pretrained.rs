//! `--pretrained`: starting weights from a Hugging Face BERT state dict (`model.safetensors`,
//! or `safetensors.torch.save_file(model.state_dict())` of any `BertFor*` / `BertModel`) or a
//! run_bert checkpoint (pretraining, then fine-tuning from it). Matched by Hugging Face name.
//! The encoder (`bert.embeddings.*`, `bert.encoder.*`) must be complete with the model's
//! shapes; a head the weights do not have (another task's checkpoint) starts fresh, and the
//! heads of other tasks in the file are left out — as `from_pretrained` does when fine-tuning
//! from `bert-base-uncased`. Older names load too: `LayerNorm.gamma` / `.beta`, a bare
//! `BertModel` without the `bert.` prefix, the tied `cls.predictions.decoder.*` and the
//! `position_ids` buffer.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use modelzoo_engine::state_dict::StateDictError;
use tch::nn::VarStore;
use tch::Tensor;

/// Why the weights do not load (names the file, the tensor and what to change).
pub type PretrainedError = StateDictError;

/// Starting weights, read and renamed to this crate's (Hugging Face's current) names.
pub struct Weights {
    pub path: PathBuf,
    /// "Hugging Face safetensors" or "run_bert checkpoint".
    pub kind: &'static str,
    tensors: HashMap<String, Tensor>,
}

/// What [`Weights::load_into`] did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LoadReport {
    /// Variables copied from the file.
    pub loaded: usize,
    /// Variables the file does not have (this task's head): they keep their initialisation.
    pub fresh: Vec<String>,
    /// File tensors of other heads, left out.
    pub ignored: Vec<String>,
}

/// Heads (and the pooler) a file may carry for another task.
fn is_head(name: &str) -> bool {
    ["cls.", "classifier.", "qa_outputs.", "bert.pooler."]
        .iter()
        .any(|p| name.starts_with(p))
}

fn read_error(path: &Path, message: String) -> StateDictError {
    StateDictError::Read {
        path: path.to_path_buf(),
        message,
    }
}

impl Weights {
    /// Reads `path`: a safetensors file, or a run_bert checkpoint (a `step_*.ckpt`, a
    /// checkpoints directory or a run's output directory: its newest checkpoint).
    pub fn read(path: &Path) -> Result<Weights, PretrainedError> {
        let is_ckpt = path.is_dir() || path.extension().is_some_and(|e| e == "ckpt");
        if !path.is_dir() {
            // libtorch opens the file itself: a FIFO would block it where no signal ends the
            // read, `/dev/zero` would be read without end. Weights may be GBs: no size bound.
            modelzoo_support::input::check_regular(path, "--pretrained")
                .map_err(|e| read_error(path, e.reason()))?;
        }
        let (kind, named): (&'static str, Vec<(String, Tensor)>) = if is_ckpt {
            let loaded = modelzoo_engine::checkpoint::read_newest(path)
                .map_err(|e| read_error(path, e.to_string()))?;
            let named = loaded
                .named
                .into_iter()
                .filter_map(|(k, t)| k.strip_prefix("model/").map(|k| (k.to_string(), t)))
                .collect();
            ("run_bert checkpoint", named)
        } else {
            // tch panics (rather than erring) on some malformed files.
            match std::panic::catch_unwind(|| Tensor::read_safetensors(path)) {
                Ok(Ok(named)) => ("Hugging Face safetensors", named),
                Ok(Err(e)) => {
                    return Err(read_error(
                        path,
                        format!("not a safetensors state dict ({e}); give a BERT model.safetensors or a run_bert checkpoint"),
                    ))
                }
                Err(_) => {
                    return Err(read_error(
                        path,
                        "not a safetensors state dict; give a BERT model.safetensors or a run_bert checkpoint".into(),
                    ))
                }
            }
        };
        let bare = !named.iter().any(|(k, _)| k.starts_with("bert."));
        let mut tensors = HashMap::new();
        for (key, t) in named {
            let mut k = key;
            for (old, new) in [
                ("LayerNorm.gamma", "LayerNorm.weight"),
                ("LayerNorm.beta", "LayerNorm.bias"),
            ] {
                if let Some(stem) = k.strip_suffix(old) {
                    k = format!("{stem}{new}");
                }
            }
            if bare
                && ["embeddings.", "encoder.", "pooler."]
                    .iter()
                    .any(|p| k.starts_with(p))
            {
                k = format!("bert.{k}");
            }
            tensors.insert(k, t);
        }
        tensors.remove("bert.embeddings.position_ids");
        tensors.remove("bert.embeddings.token_type_ids");
        // The decoder is the word embedding; its bias is `cls.predictions.bias`.
        tensors.remove("cls.predictions.decoder.weight");
        if let Some(b) = tensors.remove("cls.predictions.decoder.bias") {
            tensors.entry("cls.predictions.bias".into()).or_insert(b);
        }
        if !tensors.contains_key("bert.embeddings.word_embeddings.weight") {
            return Err(StateDictError::Missing {
                path: path.to_path_buf(),
                key: "bert.embeddings.word_embeddings.weight".into(),
                more: String::new(),
                hint: format!("this {kind} is not a BERT's (Hugging Face names expected)"),
            });
        }
        Ok(Weights {
            path: path.to_path_buf(),
            kind,
            tensors,
        })
    }

    /// Rows of the word embedding.
    pub fn vocab_size(&self) -> i64 {
        self.tensors["bert.embeddings.word_embeddings.weight"].size()[0]
    }

    /// (hidden size, encoder layers) of the weights, for messages.
    fn shape(&self) -> (i64, usize) {
        let hidden = self.tensors["bert.embeddings.word_embeddings.weight"].size()[1];
        let layers = self
            .tensors
            .keys()
            .filter_map(|k| {
                k.strip_prefix("bert.encoder.layer.")?
                    .split('.')
                    .next()?
                    .parse::<usize>()
                    .ok()
            })
            .max()
            .map_or(0, |l| l + 1);
        (hidden, layers)
    }

    /// Copies the weights into `vs` (a [`crate::Bert`] of `model_name`): see the module
    /// documentation for what must match. `vs` is unchanged when an error is returned.
    pub fn load_into(
        &self,
        vs: &VarStore,
        model_name: &str,
    ) -> Result<LoadReport, PretrainedError> {
        let (hidden, layers) = self.shape();
        let hint = |key: &str| {
            if key == "bert.embeddings.word_embeddings.weight" {
                format!(
                    "the weights have {} token ids: pass --vocab_size {} and their tokenizer (--tokenizer)",
                    self.vocab_size(),
                    self.vocab_size()
                )
            } else {
                format!(
                    "these weights (hidden size {hidden}, {layers} layers) are not --model_name {model_name}'s shape"
                )
            }
        };
        let mut vars: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
        vars.sort_by(|a, b| a.0.cmp(&b.0));
        let mut report = LoadReport::default();
        for (name, var) in &vars {
            match self.tensors.get(name) {
                Some(t) if t.size() != var.size() => {
                    return Err(StateDictError::Shape {
                        path: self.path.clone(),
                        key: name.clone(),
                        got: t.size(),
                        want: var.size(),
                        hint: hint(name),
                    })
                }
                Some(_) => report.loaded += 1,
                None if is_head(name) => report.fresh.push(name.clone()),
                None => {
                    let missing = vars
                        .iter()
                        .filter(|(n, _)| !is_head(n) && !self.tensors.contains_key(n))
                        .count();
                    return Err(StateDictError::Missing {
                        path: self.path.clone(),
                        key: name.clone(),
                        more: if missing > 1 {
                            format!(" (and {} more missing)", missing - 1)
                        } else {
                            String::new()
                        },
                        hint: hint(name),
                    });
                }
            }
        }
        let mut unexpected = Vec::new();
        for key in self.tensors.keys() {
            if vars.iter().any(|(n, _)| n == key) {
                continue;
            }
            if is_head(key) {
                report.ignored.push(key.clone());
            } else {
                unexpected.push(key.clone());
            }
        }
        if !unexpected.is_empty() {
            unexpected.sort();
            let shown: Vec<String> = unexpected
                .iter()
                .take(5)
                .map(|k| format!("{k:?}"))
                .collect();
            return Err(StateDictError::Unexpected {
                path: self.path.clone(),
                keys: if unexpected.len() > 5 {
                    format!("{} and {} more", shown.join(", "), unexpected.len() - 5)
                } else {
                    shown.join(", ")
                },
                hint: hint(""),
            });
        }
        report.ignored.sort();
        tch::no_grad(|| {
            for (name, var) in &vars {
                if let Some(src) = self.tensors.get(name) {
                    var.shallow_clone().copy_(src);
                }
            }
        });
        Ok(report)
    }
}
