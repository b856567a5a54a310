//! `modelzoo_gpt`: the GPT standard case — FleetX config sections, a pre-LayerNorm GPT-2 in
//! tch with a KV cache, zero-shot generation, the checkpoint layout `run_gpt --generate --ckpt`
//! reads, and the recipe `run_gpt` runs (its data and tokenizers come from `modelzoo-text`).

pub mod args;
pub mod checkpoint;
pub mod config;
pub mod generate;
pub mod model;
pub mod module;
pub mod recipe;

pub use config::GptConfig;
pub use model::{Gpt, KvCache};
