//! The `Optimizer` section: AdamW, its cosine schedule and gradient clipping.

use serde::{Deserialize, Serialize};

use super::{unsupported, Unsupported};

/// `Optimizer`: AdamW with a cosine schedule and global-norm clipping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Optimizer {
    /// `AdamW`, or FleetX's `FusedAdamW` (the same update, Paddle's fused kernel); anything
    /// else is an error.
    pub name: Option<String>,
    pub weight_decay: f64,
    /// FleetX's current configs spell the three `beta1`, `beta2`, `epsilon`; both are read
    /// (giving both spellings is an error).
    #[serde(alias = "beta1")]
    pub adam_beta1: f64,
    #[serde(alias = "beta2")]
    pub adam_beta2: f64,
    #[serde(alias = "epsilon")]
    pub adam_epsilon: f64,
    pub lr: LrSchedule,
    pub grad_clip: GradClip,
    /// Paddle's tensor fusion; not available, `true` is an error.
    pub tensor_fusion: bool,
}

impl Default for Optimizer {
    fn default() -> Self {
        Optimizer {
            name: None,
            weight_decay: 0.01,
            adam_beta1: 0.9,
            adam_beta2: 0.999,
            adam_epsilon: 1.0e-8,
            lr: LrSchedule::default(),
            grad_clip: GradClip::Norm(1.0),
            tensor_fusion: false,
        }
    }
}

/// `Optimizer.grad_clip`: the seeds write a bare number, newer FleetX configs a mapping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GradClip {
    Norm(f64),
    Named(NamedClip),
}

/// `grad_clip: {name: ClipGradByGlobalNorm, clip_norm: 1.0}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedClip {
    pub name: Option<String>,
    pub clip_norm: f64,
}

impl GradClip {
    /// The global-norm bound; `None` when clipping is off (≤ 0).
    pub fn max_norm(&self) -> Option<f64> {
        let v = match self {
            GradClip::Norm(v) => *v,
            GradClip::Named(n) => n.clip_norm,
        };
        (v > 0.0).then_some(v)
    }
}

/// `Optimizer.lr`: linear warmup then cosine decay from `max_lr` to `min_lr` (FleetX
/// `CosineAnnealingWithWarmupDecay`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LrSchedule {
    pub name: Option<String>,
    pub decay_steps: u64,
    pub warmup_rate: f64,
    pub max_lr: f64,
    pub min_lr: f64,
}

impl Default for LrSchedule {
    fn default() -> Self {
        LrSchedule {
            name: None,
            decay_steps: 360_000,
            warmup_rate: 0.01,
            max_lr: 5.0e-5,
            min_lr: 1.0e-5,
        }
    }
}

impl LrSchedule {
    /// Learning rate for optimizer step `step` (0-based), as FleetX computes it: warmup over
    /// `warmup_rate × decay_steps` steps, cosine to `min_lr` at `decay_steps`, then `min_lr`.
    pub fn lr_at(&self, step: u64) -> f64 {
        self.to_schedule()
            .lr_at(self.max_lr, step, self.decay_steps)
    }

    /// The engine schedule computing this (peak = `max_lr`).
    pub fn to_schedule(&self) -> modelzoo_engine::Schedule {
        modelzoo_engine::Schedule::WarmupCosineDecay {
            warmup_steps: (self.warmup_rate * self.decay_steps as f64).floor() as u64,
            decay_steps: self.decay_steps,
            min_lr: self.min_lr,
        }
    }
}

impl Optimizer {
    /// Rejects optimizers and options we do not implement; `program` (`run_gpt`) names the
    /// command in the message.
    pub fn validate(&self, program: &str) -> Result<(), Unsupported> {
        if let Some(name) = &self.name {
            if !name.eq_ignore_ascii_case("adamw") && !name.eq_ignore_ascii_case("fusedadamw") {
                return Err(unsupported(
                    "Optimizer.name",
                    name,
                    format!("{program} trains with AdamW only (AdamW or FleetX's FusedAdamW)"),
                ));
            }
        }
        if let Some(name) = &self.lr.name {
            if name != "CosineAnnealingWithWarmupDecay" {
                return Err(unsupported(
                    "Optimizer.lr.name",
                    name,
                    "only CosineAnnealingWithWarmupDecay (linear warmup + cosine) is implemented",
                ));
            }
        }
        if let GradClip::Named(NamedClip {
            name: Some(name), ..
        }) = &self.grad_clip
        {
            if name != "ClipGradByGlobalNorm" {
                return Err(unsupported(
                    "Optimizer.grad_clip.name",
                    name,
                    "only ClipGradByGlobalNorm is implemented",
                ));
            }
        }
        if self.tensor_fusion {
            return Err(unsupported(
                "Optimizer.tensor_fusion",
                true,
                "Paddle tensor fusion has no libtorch equivalent; set it to False",
            ));
        }
        if !(0.0..1.0).contains(&self.adam_beta1) || !(0.0..1.0).contains(&self.adam_beta2) {
            return Err(unsupported(
                "Optimizer.adam_beta1/adam_beta2",
                format!("{}/{}", self.adam_beta1, self.adam_beta2),
                "betas must be in [0, 1)",
            ));
        }
        if !self.lr.max_lr.is_finite()
            || self.lr.max_lr <= 0.0
            || !self.lr.min_lr.is_finite()
            || self.lr.min_lr < 0.0
        {
            return Err(unsupported(
                "Optimizer.lr.max_lr",
                self.lr.max_lr,
                "max_lr must be a finite number > 0 and min_lr a finite number >= 0",
            ));
        }
        if !self.weight_decay.is_finite() || self.weight_decay < 0.0 {
            return Err(unsupported(
                "Optimizer.weight_decay",
                self.weight_decay,
                "must be a finite number >= 0",
            ));
        }
        if !self.adam_epsilon.is_finite() || self.adam_epsilon <= 0.0 {
            return Err(unsupported(
                "Optimizer.adam_epsilon",
                self.adam_epsilon,
                "must be a finite number > 0",
            ));
        }
        if !(0.0..=1.0).contains(&self.lr.warmup_rate) {
            return Err(unsupported(
                "Optimizer.lr.warmup_rate",
                self.lr.warmup_rate,
                "must be in [0, 1]",
            ));
        }
        Ok(())
    }
}
