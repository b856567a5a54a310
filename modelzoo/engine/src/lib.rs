//! `modelzoo-engine`: the FleetX engine contract in Rust — a model implements the
//! [`BasicModule`] hooks, the [`Engine`] owns the loop: device placement, AMP (bf16, or fp16 with
//! dynamic loss scaling), gradient accumulation, global-norm clipping, LR stepping, metric
//! output, evaluation and atomic checkpoints with exact resume.

pub mod app;
pub mod checkpoint;
pub mod data;
pub mod device;
pub mod dist;
pub mod driver;
pub mod dump;
mod engine;
mod error;
pub mod launch;
mod module;
pub mod optim;
pub mod rng;
pub mod runner;
pub mod scaler;
mod settings;
pub mod state_dict;

pub use data::{BatchError, BatchSource};
pub use device::TrainDevice;
pub use dist::{DataParallel, WorldInfo};
/// A value of a run's log record (what [`app::Recipe::facts`] returns).
pub use dllogger::Value as LogValue;
pub use dump::{at_least_f32, DumpLevel, DumpSettings, Fp64Device};
pub use engine::{install_signal_handlers, Engine, FitSummary};
pub use module::{BasicModule, EvalOutput, MetricSink, StepInfo};
pub use optim::{Algorithm, Optimizer, OptimizerConfig, Schedule};
pub use settings::{EngineSettings, Precision};

use std::path::PathBuf;

/// Number of trainable parameters in `vs`: what a model's reference (torchvision's
/// `sum(p.numel() for p in model.parameters())`) is checked against, shared by every model.
pub fn parameter_count(vs: &tch::nn::VarStore) -> i64 {
    vs.trainable_variables()
        .iter()
        .map(|t| t.numel() as i64)
        .sum()
}

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
    /// The validation loss is NaN or infinite: the weights diverged (the training losses
    /// logged before were finite); a run that validated to NaN has not succeeded.
    #[error("validation loss became non-finite ({value}) at step {step}; stopped. The weights diverged (the training loss up to here was finite): lower the learning rate or check the data. The metric log holds the evaluation; checkpoints in {ckpt_dir} may hold the diverged weights")]
    NonFiniteEval {
        step: u64,
        value: f64,
        ckpt_dir: PathBuf,
    },
    #[error("cannot place the model on {device}: {message}")]
    Device { device: String, message: String },
    /// A multi-tensor op of the optimizer step (unscale, clip, LAMB) failed in libtorch.
    #[error("optimizer step {step}: {source}")]
    OptimizerStep {
        step: u64,
        #[source]
        source: device_sdaa::DeviceError,
    },
    #[error("training data yields {batches} batch(es) per epoch, fewer than accumulate_steps = {accumulate}: lower the batch size or the accumulation")]
    NoData { batches: usize, accumulate: u64 },
    #[error("invalid engine settings: {0}")]
    Settings(String),
    /// The checkpoint directory holds checkpoints this run must not mix with its own.
    #[error("checkpoint directory {dir} {detail}")]
    CheckpointDirInUse { dir: PathBuf, detail: String },
    /// The checkpoint to resume from cannot be used (unreadable, another model's).
    #[error("cannot resume: {0}")]
    Resume(Box<EngineError>),
    /// The run ended without a single optimizer step: every batch failed to load, or the
    /// resumed checkpoint had already reached the end of the schedule.
    #[error("{}", nothing_trained(*.step, *.total, *.ends_by_epochs, *.skipped, .first_skip.as_deref()))]
    NothingTrained {
        /// Steps done (0, or the resumed checkpoint's step).
        step: u64,
        /// Steps the schedule asked for.
        total: u64,
        /// The epochs end the schedule, not `--step`.
        ends_by_epochs: bool,
        /// Training samples that failed to load.
        skipped: u64,
        /// Why the first skipped sample failed.
        first_skip: Option<String>,
    },
    /// The validation set yielded no sample: every one failed to load, or it is empty.
    #[error("validation evaluated nothing: {}", nothing_evaluated(*.skipped, .first_skip.as_deref()))]
    NothingEvaluated {
        /// Validation samples that failed to load.
        skipped: u64,
        /// Why the first of them failed.
        first_skip: Option<String>,
    },
    /// Rendezvous, process group or collective failure in a data-parallel run.
    #[error("data parallel: {0}")]
    Distributed(String),
    /// Writing the `--dump` of a step failed (I/O, the capture): exit 1.
    #[error("precision dump: {0}")]
    Dump(String),
    /// A [`BatchSource`] could not produce a batch (its message as the data crate words it):
    /// the data must change, exit 2.
    #[error(transparent)]
    Data(BatchError),
}

impl EngineError {
    /// The process exit code of a `run_<model>` that stops with this error: 2 for what the
    /// input must change (settings, data, checkpoint directory, the checkpoint resumed from),
    /// 1 for a run that started and failed.
    pub fn exit_code(&self) -> u8 {
        match self {
            EngineError::Settings(_)
            | EngineError::NoData { .. }
            | EngineError::CheckpointDirInUse { .. }
            | EngineError::Resume(_)
            | EngineError::NothingTrained { .. }
            | EngineError::NothingEvaluated { .. }
            | EngineError::Data(_) => 2,
            EngineError::Io { .. }
            | EngineError::Checkpoint { .. }
            | EngineError::NonFiniteLoss { .. }
            | EngineError::NonFiniteEval { .. }
            | EngineError::Device { .. }
            | EngineError::OptimizerStep { .. }
            | EngineError::Distributed(_)
            | EngineError::Dump(_) => 1,
        }
    }
}

fn nothing_evaluated(skipped: u64, first_skip: Option<&str>) -> String {
    if skipped > 0 {
        let first = first_skip.map_or(String::new(), |f| format!("; the first: {f}"));
        format!(
            "every validation sample failed to load and was skipped ({skipped} skipped reads){first}; fix or remove them"
        )
    } else {
        "the validation set yielded no batch (is it empty?)".to_string()
    }
}

fn nothing_trained(
    step: u64,
    total: u64,
    ends_by_epochs: bool,
    skipped: u64,
    first_skip: Option<&str>,
) -> String {
    if skipped > 0 {
        let first = first_skip.map_or(String::new(), |f| format!("; the first: {f}"));
        return format!(
            "no training step was done: every training sample failed to load and was skipped \
             ({skipped} skipped reads){first}"
        );
    }
    if step >= total && total > 0 {
        return format!(
            "nothing to train: the run resumed at step {step}, and the schedule ends at step {total}; raise {} to train further",
            if ends_by_epochs {
                "--epoch (Engine.num_train_epochs)"
            } else {
                "--step (Engine.max_steps)"
            }
        );
    }
    format!(
        "no training step was done (step {step} of {total}): the training data yielded no batch"
    )
}
