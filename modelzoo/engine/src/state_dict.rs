//! Starting a model from a reference implementation's weights: a safetensors state dict
//! (torchvision's `model.state_dict()`, Hugging Face's `model.safetensors`) loaded into a
//! `VarStore` by name, strictly, like PyTorch's `load_state_dict(strict=True)`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tch::{nn::VarStore, Tensor};

/// Why a state dict does not fit the model. Each mismatch names the tensor and ends with the
/// caller's hint (which model, which arguments the weights must match).
#[derive(Debug, thiserror::Error)]
pub enum StateDictError {
    #[error("cannot read the state dict {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("state dict {path} has no tensor {key:?}{more}; {hint}")]
    Missing {
        path: PathBuf,
        key: String,
        more: String,
        hint: String,
    },
    #[error("state dict {path}: {key:?} has shape {got:?} but the model needs {want:?}; {hint}")]
    Shape {
        path: PathBuf,
        key: String,
        got: Vec<i64>,
        want: Vec<i64>,
        hint: String,
    },
    #[error("state dict {path} holds tensors the model does not have: {keys}; {hint}")]
    Unexpected {
        path: PathBuf,
        keys: String,
        hint: String,
    },
}

/// Checks `--pretrained <path>` before a run starts: it must name a regular file. The message
/// says which way it is wrong and ends with `what` (the kind of file expected).
pub fn check_weights_file(path: &Path, what: &str) -> Result<(), String> {
    let why = if path.is_dir() {
        "is a directory; give the file inside it"
    } else if !path.exists() {
        "no such file"
    } else if !path.is_file() {
        "not a regular file"
    } else {
        return Ok(());
    };
    Err(format!("--pretrained {}: {why}; {what}", path.display()))
}

/// Copies every variable of `vs` from the safetensors file at `path`, matched by name and
/// converted to the variable's dtype (fp16 / bf16 files load into fp32 variables). File
/// tensors for which `ignore` is true are passed over (buffers the reference saves but the
/// model computes, a tied head). Strict: a missing, misshapen or extra tensor is an error
/// naming it (ending with `hint`), and then `vs` is left unchanged. Returns the number of
/// tensors loaded.
pub fn load_safetensors(
    vs: &VarStore,
    path: &Path,
    ignore: &dyn Fn(&str) -> bool,
    hint: &str,
) -> Result<usize, StateDictError> {
    // A regular file: tch reads it itself, and a FIFO would block it, `/dev/zero` would be
    // read without end (issue #38). Weights may be GBs: no size bound.
    modelzoo_support::input::check_regular(path, "weights").map_err(|e| StateDictError::Read {
        path: path.to_path_buf(),
        message: e.reason(),
    })?;
    // tch panics (rather than erring) on some malformed files.
    let named = match std::panic::catch_unwind(|| Tensor::read_safetensors(path)) {
        Ok(Ok(named)) => named,
        Ok(Err(e)) => {
            return Err(StateDictError::Read {
                path: path.to_path_buf(),
                message: e.to_string(),
            })
        }
        Err(_) => {
            return Err(StateDictError::Read {
                path: path.to_path_buf(),
                message: "not a safetensors file".to_string(),
            })
        }
    };
    let mut file: HashMap<String, Tensor> = named.into_iter().filter(|(k, _)| !ignore(k)).collect();
    let mut vars: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
    vars.sort_by(|a, b| a.0.cmp(&b.0));
    let missing: Vec<&String> = vars
        .iter()
        .map(|(k, _)| k)
        .filter(|k| !file.contains_key(*k))
        .collect();
    if let Some(first) = missing.first() {
        let more = match missing.len() {
            1 => String::new(),
            n => format!(" (and {} more missing)", n - 1),
        };
        return Err(StateDictError::Missing {
            path: path.to_path_buf(),
            key: first.to_string(),
            more,
            hint: hint.to_string(),
        });
    }
    for (key, var) in &vars {
        let got = file[key].size();
        if got != var.size() {
            return Err(StateDictError::Shape {
                path: path.to_path_buf(),
                key: key.clone(),
                got,
                want: var.size(),
                hint: hint.to_string(),
            });
        }
    }
    let mut extra: Vec<&String> = file
        .keys()
        .filter(|k| !vars.iter().any(|(v, _)| v == *k))
        .collect();
    if !extra.is_empty() {
        extra.sort();
        let shown: Vec<String> = extra.iter().take(5).map(|k| format!("{k:?}")).collect();
        let rest = extra.len().saturating_sub(5);
        let keys = if rest > 0 {
            format!("{} and {rest} more", shown.join(", "))
        } else {
            shown.join(", ")
        };
        return Err(StateDictError::Unexpected {
            path: path.to_path_buf(),
            keys,
            hint: hint.to_string(),
        });
    }
    tch::no_grad(|| {
        for (key, var) in &vars {
            if let Some(src) = file.remove(key) {
                var.shallow_clone().copy_(&src);
            }
        }
    });
    Ok(vars.len())
}
