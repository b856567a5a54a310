//! What every image classifier's [`Recipe`](modelzoo_engine::app::Recipe) shares: the engine
//! plan from the `Engine` section and the flags, the variant `--model_name` names, the image
//! size the data gives, and the train / val loaders from the standard arguments.

use std::error::Error;
use std::str::FromStr;

use modelzoo_engine::app::{Plan, RunContext, RunError};
use modelzoo_engine::runner::{self, MemoryNeed};
use run_scripts_template::StandardArgs;

use crate::{Cifar10, ImageData, Loader};

/// The FleetX config sections an image model reads (`-c` / `-o`); any other is an error.
pub const SECTIONS: &[&str] = &["Engine"];

/// The variant `--model_name` names, `default` when it names none (the spec restricts the
/// choices).
pub fn variant<V>(std: &StandardArgs, default: &str) -> Result<V, RunError>
where
    V: FromStr,
    V::Err: Into<Box<dyn Error + Send + Sync>>,
{
    std.model_name
        .as_deref()
        .unwrap_or(default)
        .parse()
        .map_err(RunError::input)
}

/// The image size the model sees: CIFAR-10 images are 32 px whatever `--image_size` says.
pub fn model_image_size(std: &StandardArgs, image_size: i64) -> usize {
    match std.dataset_path.as_deref() {
        Some(root) if Cifar10::detect(root) => 32,
        _ => image_size as usize,
    }
}

/// The plan of an image model's run: engine settings from the `Engine` section and the flags,
/// `--batch_size`, and the memory one step needs (when the model can size it).
pub fn plan(std: &StandardArgs, memory: Option<MemoryNeed>) -> Result<Plan<()>, RunError> {
    Ok(Plan {
        settings: runner::settings_from_config(std, SECTIONS)?,
        batch_size: std.batch_size as usize,
        memory,
        prepared: (),
    })
}

/// This process's training and validation loaders, and what they read (for messages).
pub struct Loaders {
    pub train: Loader,
    pub val: Loader,
    /// "the synthetic training set" or "the training data in <dir>".
    pub data: String,
}

/// The loaders of `--dataset_path` (or the synthetic set of `synthetic_samples` images) for
/// this rank, with the standard batch size, workers and the run's seed.
pub fn loaders(
    std: &StandardArgs,
    synthetic_samples: i64,
    num_classes: i64,
    image_size: i64,
    run: &RunContext,
) -> Result<Loaders, RunError> {
    let (rank, world) = run.rank_and_world();
    let (train, val) = ImageData {
        dataset_path: std.dataset_path.as_deref(),
        synthetic_samples: synthetic_samples as usize,
        num_classes: num_classes as usize,
        image_size: image_size as usize,
        batch_size: std.batch_size as usize,
        num_workers: std.num_workers as usize,
        seed: run.settings.seed,
    }
    .loaders(rank, world)
    .map_err(RunError::input)?;
    let data = std.dataset_path.as_deref().map_or_else(
        || "the synthetic training set".to_string(),
        |p| format!("the training data in {}", p.display()),
    );
    Ok(Loaders { train, val, data })
}
