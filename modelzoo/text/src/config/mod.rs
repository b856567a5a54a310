//! The FleetX config sections every decoder language model of the zoo reads the same way
//! (`Global`, `Data`, `Optimizer`, `Generation`, `Distributed`, `Profiler`, `Fused`), typed with
//! serde so a misspelled key is an error that lists the valid keys, and validated so an option
//! we cannot honour is an error naming it: every key is applied or refused, never ignored.
//! The architecture (`Model`) is each model's own ([`ModelSection`]); these live here so
//! `run_gpt` and `run_llama` parse, validate and document them once, and load the whole file the
//! same way ([`LmConfig`]).
//!
//! Two layouts are read: the seeds' (`Data.batch_size`, `Data.dataset`) and FleetX's current one
//! (`Global.*_batch_size`, `Data.Train` / `Data.Eval`, usually through `_base_`); both resolve to
//! the same [`Data`].

mod amp;
pub mod complete;
mod data;
mod distributed;
mod generation;
mod global;
mod lm;
mod model;
mod optimizer;

pub use amp::AMP_OPS;
pub use data::{
    BatchSize, BatchSizeSection, Data, DataSection, DataStage, Dataset, Loader, ResolvedBatch,
    Sampler,
};
pub use distributed::{Distributed, Fused, Profiler, Sharding};
pub use generation::{DecodeStrategy, Generation};
pub use global::Global;
pub use lm::{Incomplete, LmConfig, LmConfigError, REQUIRED_SECTIONS, SECTIONS};
pub use model::ModelSection;
pub use optimizer::{GradClip, LrSchedule, NamedClip, Optimizer};

use model_config::fleetx::ConfigTree;

/// A config value we parse but cannot honour, or values that contradict each other.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("`{key}` = {value}: {reason}")]
pub struct Unsupported {
    /// Full key path, e.g. `Optimizer.name`.
    pub key: &'static str,
    pub value: String,
    /// Why, and what to do instead.
    pub reason: String,
}

/// Builds an [`Unsupported`] (the models' own sections use it too).
pub fn unsupported(key: &'static str, value: impl ToString, reason: impl ToString) -> Unsupported {
    Unsupported {
        key,
        value: value.to_string(),
        reason: reason.to_string(),
    }
}

/// `value (file:line)`: a value and where it was set, for messages about two places.
pub(crate) fn located(tree: &ConfigTree, path: &[&str], value: impl std::fmt::Display) -> String {
    format!("{value} ({})", tree.origin(path))
}
