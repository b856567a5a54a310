//! `modelzoo-text`: token data for any decoder language model of the zoo — the token stream
//! ([`Corpus`]: Megatron `.npy`/`.npz`, `.txt`/`.jsonl`, the built-in corpus), its FleetX
//! split and samples ([`GptDataset`]), the tokenizers ([`Tokenizer`]: byte-level or a
//! Hugging Face `tokenizer.json` such as GPT-2's BPE), and [`TokenBatches`], the engine's
//! [`modelzoo_engine::BatchSource`] of [`TokenBatch`]es.

pub mod batches;
pub mod corpus;
pub mod npy;
pub mod tokenizer;

pub use batches::{TokenBatch, TokenBatches};
pub use corpus::{Corpus, DataError, GptDataset, Split, BUILTIN_CORPUS};
pub use tokenizer::{Tokenizer, TokenizerError};
