//! `modelzoo_gpt`: the GPT standard case — FleetX config sections, a pre-LayerNorm GPT-2 in
//! tch with a KV cache, Megatron / text / built-in data, zero-shot generation, the
//! checkpoint layout `run_gpt --generate --ckpt` reads, and the recipe `run_gpt` runs.

pub mod args;
pub mod checkpoint;
pub mod config;
pub mod data;
pub mod generate;
pub mod model;
pub mod module;
pub mod recipe;
pub mod tokenizer;

pub use config::GptConfig;
pub use model::{Gpt, KvCache};
