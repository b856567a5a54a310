//! The ViT as an engine [`BasicModule`]: cross-entropy with label smoothing, top-1/top-5, AdamW
//! with linear warmup then cosine, global-norm gradient clipping (torchvision's ViT recipe).

use modelzoo_engine::{Algorithm, BasicModule, EvalOutput, OptimizerConfig, Schedule, TrainDevice};
use modelzoo_vision::ImageBatch;
use tch::nn::{self, ModuleT};
use tch::{Reduction, Tensor};

use crate::model::{ImageSizeError, Variant, ViT};

/// Optimisation hyper-parameters of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Hyper {
    /// Peak learning rate (after warmup).
    pub lr: f64,
    /// AdamW decoupled weight decay (on >1-D parameters, see [`OptimizerConfig`]).
    pub weight_decay: f64,
    pub label_smoothing: f64,
    /// Warmup as a fraction of the run's optimizer steps, used when `warmup_steps` is `None`.
    pub warmup_fraction: f64,
    pub warmup_steps: Option<u64>,
    /// Global-norm clip; `None` does not clip.
    pub clip_grad_norm: Option<f64>,
}

impl Hyper {
    /// Optimizer steps of linear warmup in a run of `total_steps`.
    pub fn warmup_steps(&self, total_steps: u64) -> u64 {
        self.warmup_steps
            .unwrap_or_else(|| (self.warmup_fraction * total_steps as f64).round() as u64)
    }
}

/// torch.optim.AdamW's default betas and epsilon (torchvision's recipe keeps them).
pub const ADAMW: Algorithm = Algorithm::AdamW {
    beta1: 0.9,
    beta2: 0.999,
    epsilon: 1e-8,
};

/// A ViT and its training recipe.
pub struct ViTModule {
    vs: nn::VarStore,
    net: ViT,
    hyper: Hyper,
    num_classes: i64,
}

impl ViTModule {
    /// Build on the CPU with `seed`-determined initial weights.
    pub fn new(
        variant: Variant,
        image_size: i64,
        num_classes: i64,
        hyper: Hyper,
        seed: u64,
    ) -> Result<ViTModule, ImageSizeError> {
        tch::manual_seed(seed as i64);
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let net = ViT::new(&vs.root(), variant, image_size, num_classes)?;
        Ok(ViTModule {
            vs,
            net,
            hyper,
            num_classes,
        })
    }
}

impl BasicModule for ViTModule {
    type Batch = ImageBatch;
    fn items_in(&self, batch: &ImageBatch) -> usize {
        batch.len()
    }
    fn ips_unit(&self) -> &'static str {
        "imgs/s"
    }
    fn val_metric_meta(&self) -> Vec<(&'static str, &'static str, &'static str)> {
        vec![("val.top1", "%", "MAXIMIZE"), ("val.top5", "%", "MAXIMIZE")]
    }
    fn var_store(&self) -> &nn::VarStore {
        &self.vs
    }
    fn var_store_mut(&mut self) -> &mut nn::VarStore {
        &mut self.vs
    }
    fn pretreating_batch(&mut self, batch: ImageBatch, device: &dyn TrainDevice) -> ImageBatch {
        ImageBatch {
            images: device.to_device(&batch.images),
            labels: device.to_device(&batch.labels),
        }
    }
    fn training_step(&mut self, batch: &ImageBatch) -> Tensor {
        let logits = self.net.forward_t(&batch.images, true);
        modelzoo_engine::at_least_f32(&logits).cross_entropy_loss::<Tensor>(
            &batch.labels,
            None,
            Reduction::Mean,
            -100,
            self.hyper.label_smoothing,
        )
    }
    fn validation_step(&mut self, batch: &ImageBatch) -> EvalOutput {
        let logits = self.net.forward_t(&batch.images, false);
        modelzoo_vision::classification_eval(&logits, &batch.labels, self.num_classes)
    }
    fn test_step(&mut self, batch: &ImageBatch) -> Tensor {
        self.net.forward_t(&batch.images, false).argmax(1, false)
    }
    fn configure_optimizers(&self, _steps_per_epoch: u64, total_steps: u64) -> OptimizerConfig {
        OptimizerConfig {
            lr: self.hyper.lr,
            algorithm: ADAMW,
            weight_decay: self.hyper.weight_decay,
            schedule: Schedule::WarmupCosine {
                warmup_steps: self.hyper.warmup_steps(total_steps),
            },
            clip_grad_norm: self.hyper.clip_grad_norm,
        }
    }
}
