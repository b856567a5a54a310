//! `modelzoo_llama`: the LLaMA standard case — a LLaMA-class decoder in tch with Hugging Face
//! `LlamaForCausalLM`'s parameter names and numerics (RMSNorm, rotary embeddings, SwiGLU,
//! grouped-query attention, optional tied embeddings), a KV cache, activation recompute,
//! Hugging Face safetensors loading, and the recipe `run_llama` runs. Data, tokenizers, the
//! shared config sections, decoding and the checkpoint layout come from `modelzoo-text`.

pub mod args;
pub mod checkpoint;
pub mod config;
pub mod generate;
pub mod model;
pub mod module;
pub mod pretrained;
pub mod recipe;

pub use config::LlamaConfig;
pub use model::{KvCache, Llama};
