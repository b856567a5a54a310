//! `modelzoo-engine`: the FleetX engine contract in Rust — a model implements the
//! [`BasicModule`] hooks, the [`Engine`] owns the loop: device placement, AMP (bf16, or fp16 with
//! dynamic loss scaling), gradient accumulation, global-norm clipping, LR stepping, metric
//! output, evaluation and atomic checkpoints with exact resume.

pub mod checkpoint;
pub mod data;
pub mod device;
pub mod dist;
pub mod driver;
mod engine;
pub mod launch;
pub mod optim;
pub mod rng;
pub mod runner;
pub mod scaler;
mod settings;

pub use data::{BatchSource, Dataset, ImageBatch, Loader, LoaderOptions, Sample, SampleError};
pub use device::TrainDevice;
pub use dist::{DataParallel, WorldInfo};
pub use engine::{
    install_signal_handlers, BasicModule, Engine, EvalOutput, FitSummary, MetricSink, StepInfo,
};
pub use optim::{Algorithm, Optimizer, OptimizerConfig, Schedule};
pub use settings::{EngineSettings, Precision};

use std::path::PathBuf;

/// Why training or evaluation stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("checkpoint {path}: {message}")]
    Checkpoint { path: PathBuf, message: String },
    #[error("loss became non-finite ({value}) at step {step}; stopped. The last good checkpoint (if any) is kept in {ckpt_dir}")]
    NonFiniteLoss {
        step: u64,
        value: f64,
        ckpt_dir: PathBuf,
    },
    #[error("cannot place the model on {device}: {message}")]
    Device { device: String, message: String },
    #[error("training data yields {batches} batch(es) per epoch, fewer than accumulate_steps = {accumulate}: lower the batch size or the accumulation")]
    NoData { batches: usize, accumulate: u64 },
    #[error("invalid engine settings: {0}")]
    Settings(String),
    /// Rendezvous, process group or collective failure in a data-parallel run.
    #[error("data parallel: {0}")]
    Distributed(String),
}
