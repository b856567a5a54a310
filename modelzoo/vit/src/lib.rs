//! Vision Transformer (torchvision-compatible `VisionTransformer`) as a ModelZoo standard case:
//! the model, its engine module and the recipe `run_vit` trains it with (its data comes from
//! `modelzoo-vision`).

pub mod args;
pub mod model;
pub mod module;
pub mod recipe;

pub use model::{load_safetensors, LoadError, Variant, ViT, ViTConfig, VARIANT_NAMES};
pub use modelzoo_engine::parameter_count;
