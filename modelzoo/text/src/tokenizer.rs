//! Text ↔ token ids: the built-in byte-level tokenizer (256 byte tokens + `<|endoftext|>`),
//! or a Hugging Face `tokenizer.json` the user gives (GPT-2's, for instance).

use std::path::{Path, PathBuf};

/// The end-of-text marker both tokenizers use.
pub const END_OF_TEXT: &str = "<|endoftext|>";

#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error("cannot load tokenizer {}: {message}", path.display())]
    Load { path: PathBuf, message: String },
    #[error("tokenizer {}: cannot encode text: {message}", path.display())]
    Encode { path: PathBuf, message: String },
    #[error("tokenizer {}: cannot decode ids: {message}", path.display())]
    Decode { path: PathBuf, message: String },
}

/// The largest `tokenizer.json` read: real ones are 1–20 MB (GPT-2's 1.4 MB, LLaMA-3's 9 MB);
/// a larger file is refused before it is read (docs/run_gpt.md, "Input bounds").
pub const MAX_TOKENIZER_BYTES: u64 = 64 << 20;

/// One of the two supported tokenizers.
pub enum Tokenizer {
    /// Bytes 0..=255 are tokens 0..=255; token 256 is `<|endoftext|>`.
    Byte,
    /// A Hugging Face tokenizer loaded from `path`.
    Hf {
        path: PathBuf,
        inner: Box<tokenizers::Tokenizer>,
    },
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tokenizer::Byte => write!(f, "Tokenizer::Byte"),
            Tokenizer::Hf { path, .. } => write!(f, "Tokenizer::Hf({})", path.display()),
        }
    }
}

impl Tokenizer {
    /// `Some(path)`: that `tokenizer.json`; `None`: the byte-level tokenizer.
    pub fn load(path: Option<&Path>) -> Result<Tokenizer, TokenizerError> {
        let Some(path) = path else {
            return Ok(Tokenizer::Byte);
        };
        let load = |message: String| TokenizerError::Load {
            path: path.to_path_buf(),
            message,
        };
        // A regular file of a sane size, read once: `from_file` would block on a FIFO and
        // read `/dev/zero` until memory ran out.
        let bytes = modelzoo_support::input::read_bounded(path, MAX_TOKENIZER_BYTES, "tokenizer")
            .map_err(|e| load(e.reason()))?;
        // The tokenizers crate panics on some malformed files (an `expect` in its decoder
        // parsing, found by the fuzz target of tests/data.rs): that is the file's error too.
        let inner = match std::panic::catch_unwind(|| tokenizers::Tokenizer::from_bytes(&bytes)) {
            Ok(parsed) => parsed.map_err(|e| load(e.to_string()))?,
            Err(panic) => {
                let why = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("the tokenizers library gave up on it");
                return Err(load(format!("not a valid tokenizer.json: {why}")));
            }
        };
        Ok(Tokenizer::Hf {
            path: path.to_path_buf(),
            inner: Box::new(inner),
        })
    }

    /// Ids the tokenizer can produce run `0..vocab_size()` (the model's vocab_size must be
    /// at least this): its largest id + 1, which is more than its count of tokens when a
    /// `tokenizer.json` leaves ids unused or gives two tokens one id.
    pub fn vocab_size(&self) -> usize {
        match self {
            Tokenizer::Byte => 257,
            Tokenizer::Hf { inner, .. } => inner
                .get_vocab(true)
                .values()
                .max()
                .map_or(0, |&id| id as usize + 1)
                .max(inner.get_vocab_size(true)),
        }
    }

    /// The id of `<|endoftext|>`, when the vocabulary has it.
    pub fn eos_id(&self) -> Option<u32> {
        match self {
            Tokenizer::Byte => Some(256),
            Tokenizer::Hf { inner, .. } => inner.token_to_id(END_OF_TEXT),
        }
    }

    /// Ids of `text`, without special tokens added.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        match self {
            Tokenizer::Byte => Ok(text.bytes().map(u32::from).collect()),
            Tokenizer::Hf { path, inner } => inner
                .encode(text, false)
                .map(|e| e.get_ids().to_vec())
                .map_err(|e| TokenizerError::Encode {
                    path: path.clone(),
                    message: e.to_string(),
                }),
        }
    }

    /// Text of `ids`; special tokens are dropped, invalid UTF-8 becomes U+FFFD.
    pub fn decode(&self, ids: &[u32]) -> Result<String, TokenizerError> {
        match self {
            Tokenizer::Byte => {
                let bytes: Vec<u8> = ids.iter().filter_map(|&i| u8::try_from(i).ok()).collect();
                Ok(String::from_utf8_lossy(&bytes).into_owned())
            }
            Tokenizer::Hf { path, inner } => {
                inner.decode(ids, true).map_err(|e| TokenizerError::Decode {
                    path: path.clone(),
                    message: e.to_string(),
                })
            }
        }
    }
}
