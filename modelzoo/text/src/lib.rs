//! `modelzoo-text`: token data for any decoder language model of the zoo — the token stream
//! ([`Corpus`]: Megatron `.npy`/`.npz`, `.txt`/`.jsonl`, the built-in corpus), its FleetX
//! split and samples ([`GptDataset`]), the tokenizers ([`Tokenizer`]: byte-level or a
//! Hugging Face `tokenizer.json` such as GPT-2's BPE), and [`TokenBatches`], the engine's
//! [`modelzoo_engine::BatchSource`] of [`TokenBatch`]es. Also what the decoder models share
//! beyond data: the FleetX `Data` / `Optimizer` / `Generation` sections ([`config`]), the
//! KV-cache decoding loop with top-k / top-p sampling ([`generate`]), the decoder networks'
//! input checks, KV cache, offset causal mask and recompute wrapper ([`decoder`]), and the checkpoint
//! layout `--generate` reads ([`checkpoint`]), and the peak FLOP/s of `train.mfu` ([`mfu`]).

pub mod batches;
pub mod checkpoint;
pub mod config;
pub mod corpus;
pub mod decoder;
pub mod generate;
pub mod lm;
pub mod mfu;
pub mod npy;
pub mod tokenizer;

pub use batches::{TokenBatch, TokenBatches};
pub use corpus::{Corpus, DataError, GptDataset, Split, BUILTIN_CORPUS};
pub use tokenizer::{Tokenizer, TokenizerError};
