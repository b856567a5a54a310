//! The engine's resolved settings: the FleetX `Engine` section plus the command line.

use std::path::PathBuf;

use model_config::fleetx::EngineConfig;
use tch::Kind;

/// Numeric precision of the forward pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Precision {
    Fp32,
    /// Autocast to `dtype`; `loss_scale` = initial dynamic loss scale (fp16 only).
    Amp {
        dtype: Kind,
        loss_scale: Option<f64>,
    },
}

/// Everything the loop needs to know, already merged (config file < `-o` < CLI flags).
#[derive(Debug, Clone, PartialEq)]
pub struct EngineSettings {
    /// Stop after this many optimizer steps (FleetX `max_steps`, `--step`).
    pub max_steps: Option<u64>,
    pub num_train_epochs: u64,
    pub accumulate_steps: u64,
    pub logging_freq: u64,
    /// Evaluate every this many steps; `None` = at the end of each epoch.
    pub eval_freq: Option<u64>,
    /// Batches per evaluation; `None` = the whole validation set.
    pub eval_iters: Option<u64>,
    pub precision: Precision,
    /// Save every this many steps (`None` = only at epoch ends and at the end).
    pub save_steps: Option<u64>,
    /// Where checkpoints are written.
    pub ckpt_dir: PathBuf,
    /// Keep the newest K checkpoints.
    pub keep_last: usize,
    /// Checkpoint file or directory to resume from.
    pub resume: Option<PathBuf>,
    pub seed: u64,
    /// Rank written with every metric line.
    pub rank: i64,
    /// Show a progress bar (only when stderr is a terminal).
    pub progress: bool,
    /// `--dump`: write a precision dump of one step.
    pub dump: Option<crate::DumpSettings>,
    /// `--fixed_batch`: every step trains on the first batch, kept on the device (compute-only
    /// throughput, as NVIDIA's and FlagPerf's synthetic data backends measure it).
    pub fixed_batch: bool,
}

impl Default for EngineSettings {
    fn default() -> Self {
        EngineSettings {
            max_steps: None,
            num_train_epochs: 1,
            accumulate_steps: 1,
            logging_freq: 1,
            eval_freq: None,
            eval_iters: None,
            precision: Precision::Fp32,
            save_steps: None,
            ckpt_dir: PathBuf::from("./output/checkpoints"),
            keep_last: 3,
            resume: None,
            seed: 42,
            rank: 0,
            progress: true,
            dump: None,
            fixed_batch: false,
        }
    }
}

impl EngineSettings {
    /// Settings from a FleetX `Engine` section (0 means "not set" for the frequencies).
    /// `mix_precision.use_pure_fp16` turns on autocast to `mix_precision.dtype`.
    pub fn from_fleetx(cfg: &EngineConfig) -> Result<EngineSettings, crate::EngineError> {
        let nz = |v: u64| (v > 0).then_some(v);
        let precision = if cfg.mix_precision.use_pure_fp16 {
            let dtype = match cfg.mix_precision.dtype.as_str() {
                "float16" | "fp16" => Kind::Half,
                "bfloat16" | "bf16" => Kind::BFloat16,
                other => {
                    return Err(crate::EngineError::Settings(format!(
                        "Engine.mix_precision.dtype = {other:?}; valid: float16, bfloat16"
                    )))
                }
            };
            Precision::Amp {
                dtype,
                loss_scale: (dtype == Kind::Half).then_some(cfg.mix_precision.scale_loss),
            }
        } else {
            Precision::Fp32
        };
        Ok(EngineSettings {
            max_steps: nz(cfg.max_steps),
            num_train_epochs: cfg.num_train_epochs.max(1),
            accumulate_steps: cfg.accumulate_steps.max(1),
            logging_freq: cfg.logging_freq.max(1),
            eval_freq: nz(cfg.eval_freq),
            eval_iters: nz(cfg.eval_iters),
            precision,
            save_steps: nz(cfg.save_load.save_steps),
            ckpt_dir: cfg.save_load.output_dir.join("checkpoints"),
            keep_last: cfg.save_load.keep_last.unwrap_or(3).max(1),
            resume: cfg.save_load.ckpt_dir.clone(),
            ..EngineSettings::default()
        })
    }
}
