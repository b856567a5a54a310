//! ResNet (torchvision-compatible architectures) as a ModelZoo standard case: the model, its
//! engine module and the recipe `run_resnet` trains it with (its data comes from
//! `modelzoo-vision`).

pub mod args;
pub mod model;
pub mod module;
pub mod recipe;

pub use model::{parameter_count, ResNet, Variant, VARIANT_NAMES};
