//! ResNet (torchvision-compatible architectures) as a ModelZoo standard case: the model, its
//! datasets, its engine module and the `run_resnet` flow.

pub mod data;
pub mod model;
pub mod module;
pub mod run;

pub use model::{parameter_count, ResNet, Variant, VARIANT_NAMES};
