//! The WordPiece tokenizer BERT reads text with: a Hugging Face `tokenizer.json`
//! (`--tokenizer`, e.g. bert-base-uncased's), or the built-in one — a lowercase WordPiece
//! vocabulary of the built-in corpus (`data/tokenizer.json`, made by `data/gen_tokenizer.py`)
//! — with the ids of the special tokens BERT's inputs are built from.

use std::path::{Path, PathBuf};

/// The built-in `tokenizer.json`: Hugging Face `BertWordPieceTokenizer` (lowercase) trained
/// on the built-in corpus (`modelzoo-text`'s `BUILTIN_CORPUS`).
pub const BUILTIN_TOKENIZER: &str = include_str!("../data/tokenizer.json");

/// Why a tokenizer cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error("--tokenizer {}: {message}; give a Hugging Face tokenizer.json of a WordPiece (BERT) tokenizer, e.g. bert-base-uncased's", path.display())]
    Load { path: PathBuf, message: String },
    #[error("tokenizer {name} has no {token} token; BERT inputs need [CLS], [SEP], [MASK], [PAD] and [UNK] — give a BERT (WordPiece) tokenizer.json")]
    MissingSpecial { name: String, token: &'static str },
    #[error("tokenizer {name}: cannot encode text: {message}")]
    Encode { name: String, message: String },
    /// Two tokens share an id: the model could not tell those words apart, and decoding
    /// one id has two answers.
    #[error("tokenizer {name} gives {count} id(s) to more than one token ({examples}): every token of a WordPiece vocabulary needs its own id; fix the tokenizer.json's \"vocab\"")]
    DuplicateIds {
        name: String,
        count: usize,
        /// The first few, `5: "cat", "dog"`.
        examples: String,
    },
}

/// The tokenizer and its special ids.
pub struct WordPiece {
    name: String,
    path: Option<PathBuf>,
    inner: tokenizers::Tokenizer,
    pub cls: u32,
    pub sep: u32,
    pub mask: u32,
    pub pad: u32,
    pub unk: u32,
}

impl std::fmt::Debug for WordPiece {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WordPiece({})", self.name)
    }
}

/// One text's token ids and, for each, the character span of the text it came from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Encoded {
    pub ids: Vec<u32>,
    /// `(start, end)` character offsets (Unicode scalar values, as Python indexes strings).
    pub offsets: Vec<(usize, usize)>,
}

impl WordPiece {
    /// `--tokenizer PATH`, or the built-in tokenizer for `None`.
    pub fn load(path: Option<&Path>) -> Result<WordPiece, TokenizerError> {
        let (inner, name) = match path {
            None => {
                let inner = tokenizers::Tokenizer::from_bytes(BUILTIN_TOKENIZER.as_bytes())
                    .map_err(|e| TokenizerError::Load {
                        path: PathBuf::from("<built-in>"),
                        message: e.to_string(),
                    })?;
                (inner, "built-in WordPiece".to_string())
            }
            Some(p) => {
                if p.is_dir() {
                    return Err(TokenizerError::Load {
                        path: p.to_path_buf(),
                        message: "is a directory; give the tokenizer.json inside it".into(),
                    });
                }
                // A regular file within the tokenizer bound: a FIFO would block, `/dev/zero`
                // would be read until memory ran out (issue #38).
                let bytes = modelzoo_support::input::read_bounded(
                    p,
                    modelzoo_text::tokenizer::MAX_TOKENIZER_BYTES,
                    "--tokenizer",
                )
                .map_err(|e| TokenizerError::Load {
                    path: p.to_path_buf(),
                    message: e.reason(),
                })?;
                let inner = tokenizers::Tokenizer::from_bytes(&bytes).map_err(|e| {
                    TokenizerError::Load {
                        path: p.to_path_buf(),
                        message: format!("not a tokenizer.json ({e})"),
                    }
                })?;
                (inner, p.display().to_string())
            }
        };
        let special = |token: &'static str| {
            inner
                .token_to_id(token)
                .ok_or_else(|| TokenizerError::MissingSpecial {
                    name: name.clone(),
                    token,
                })
        };
        check_unique_ids(&inner, &name)?;
        Ok(WordPiece {
            cls: special("[CLS]")?,
            sep: special("[SEP]")?,
            mask: special("[MASK]")?,
            pad: special("[PAD]")?,
            unk: special("[UNK]")?,
            path: path.map(Path::to_path_buf),
            name,
            inner,
        })
    }

    /// How messages name it: the file, or "built-in WordPiece".
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The `--tokenizer` file (`None`: built-in).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Ids the tokenizer can produce run `0..vocab_size()` (the model's vocabulary must hold
    /// at least these): its largest id + 1, more than its count of tokens when a
    /// `tokenizer.json` leaves ids unused.
    pub fn vocab_size(&self) -> usize {
        self.inner
            .get_vocab(true)
            .values()
            .max()
            .map_or(0, |&id| id as usize + 1)
            .max(self.inner.get_vocab_size(true))
    }

    /// Ids of `text`, no special tokens added.
    pub fn ids(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        self.inner
            .encode_fast(text, false)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| self.encode_error(e))
    }

    /// Ids of `text` with their character offsets into it, no special tokens added.
    pub fn encode(&self, text: &str) -> Result<Encoded, TokenizerError> {
        let e = self
            .inner
            .encode_char_offsets(text, false)
            .map_err(|e| self.encode_error(e))?;
        Ok(Encoded {
            ids: e.get_ids().to_vec(),
            offsets: e.get_offsets().to_vec(),
        })
    }

    /// The token strings of `ids` (for messages and tests).
    pub fn tokens(&self, ids: &[u32]) -> Vec<String> {
        ids.iter()
            .map(|&i| self.inner.id_to_token(i).unwrap_or_else(|| "?".into()))
            .collect()
    }

    fn encode_error(&self, e: tokenizers::Error) -> TokenizerError {
        TokenizerError::Encode {
            name: self.name.clone(),
            message: e.to_string(),
        }
    }
}

/// Refuses a vocabulary in which two tokens share an id (see [`TokenizerError::DuplicateIds`]).
fn check_unique_ids(inner: &tokenizers::Tokenizer, name: &str) -> Result<(), TokenizerError> {
    let mut by_id: std::collections::BTreeMap<u32, Vec<String>> = Default::default();
    for (token, id) in inner.get_vocab(true) {
        by_id.entry(id).or_default().push(token);
    }
    let shared: Vec<(u32, Vec<String>)> = by_id
        .into_iter()
        .filter(|(_, tokens)| tokens.len() > 1)
        .map(|(id, mut tokens)| {
            tokens.sort();
            (id, tokens)
        })
        .collect();
    if shared.is_empty() {
        return Ok(());
    }
    let examples = shared
        .iter()
        .take(5)
        .map(|(id, tokens)| {
            let quoted: Vec<String> = tokens.iter().map(|t| format!("{t:?}")).collect();
            format!("{id}: {}", quoted.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ");
    Err(TokenizerError::DuplicateIds {
        name: name.to_string(),
        count: shared.len(),
        examples,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_tokenizer_is_lowercase_wordpiece_with_the_special_tokens() {
        let t = WordPiece::load(None).unwrap();
        assert_eq!(t.pad, 0, "[PAD] is id 0 as in bert-base-uncased");
        let e = t.encode("Ada walked to the River.").unwrap();
        let toks = t.tokens(&e.ids);
        assert_eq!(toks.first().map(String::as_str), Some("ada"), "{toks:?}");
        assert!(!e.ids.contains(&t.unk), "{toks:?}");
        assert_eq!(e.offsets[0], (0, 3));
        assert!(t.vocab_size() < 1000);
    }

    #[test]
    fn garbage_and_foreign_tokenizers_are_refused_with_the_file_named() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("tokenizer.json");
        std::fs::write(&junk, "{ not json").unwrap();
        let e = WordPiece::load(Some(&junk)).unwrap_err().to_string();
        assert!(
            e.contains("tokenizer.json") && e.contains("WordPiece"),
            "{e}"
        );
        let missing = dir.path().join("nope.json");
        let e = WordPiece::load(Some(&missing)).unwrap_err().to_string();
        assert!(e.contains("nope.json"), "{e}");
        // A valid tokenizer without BERT's special tokens.
        let text = BUILTIN_TOKENIZER.replace("[MASK]", "[MASQUE]");
        std::fs::write(&junk, text).unwrap();
        let e = WordPiece::load(Some(&junk)).unwrap_err().to_string();
        assert!(e.contains("[MASK]"), "{e}");
    }

    /// Issue #38 B6: a vocabulary giving two tokens one id trained without a word.
    #[test]
    fn a_vocabulary_with_shared_ids_is_refused_naming_them() {
        let t = WordPiece::load(None).unwrap();
        let (ada, walked) = (t.ids("ada").unwrap()[0], t.ids("walked").unwrap()[0]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokenizer.json");
        let text = BUILTIN_TOKENIZER.replace(
            &format!("\"walked\":{walked}"),
            &format!("\"walked\":{ada}"),
        );
        assert_ne!(text, BUILTIN_TOKENIZER, "the vocabulary entry was found");
        std::fs::write(&path, text).unwrap();
        let e = WordPiece::load(Some(&path)).unwrap_err().to_string();
        assert!(
            e.contains(&format!("{ada}: \"ada\", \"walked\"")) && e.contains("1 id(s)"),
            "{e}"
        );
    }
}
