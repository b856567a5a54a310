//! ResNet (torchvision-compatible architectures) as a ModelZoo standard case: the model, its
//! engine module and the `run_resnet` flow (its data comes from `modelzoo-vision`).

pub mod model;
pub mod module;
pub mod run;

pub use model::{parameter_count, ResNet, Variant, VARIANT_NAMES};
