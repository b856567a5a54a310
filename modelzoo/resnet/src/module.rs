//! ResNet as an engine [`BasicModule`]: cross-entropy with label smoothing, top-1/top-5, SGD
//! with warmup-cosine, optional channels-last.

use modelzoo_engine::{Algorithm, BasicModule, EvalOutput, OptimizerConfig, Schedule, TrainDevice};
use modelzoo_vision::ImageBatch;
use tch::nn::{self, ModuleT};
use tch::{Reduction, Tensor};

use crate::model::{ResNet, Variant};

/// Optimisation hyper-parameters of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Hyper {
    pub lr: f64,
    pub momentum: f64,
    pub nesterov: bool,
    pub weight_decay: f64,
    pub label_smoothing: f64,
    pub warmup_epochs: f64,
    pub clip_grad_norm: Option<f64>,
    pub channels_last: bool,
}

/// A ResNet and its training recipe.
pub struct ResNetModule {
    vs: nn::VarStore,
    net: ResNet,
    hyper: Hyper,
    num_classes: i64,
}

/// View `t` (NCHW, 4-D) with channels-last strides; conv kernels keep the layout.
pub fn to_channels_last(t: &Tensor) -> Tensor {
    t.permute([0, 2, 3, 1]).contiguous().permute([0, 3, 1, 2])
}

impl ResNetModule {
    /// SyncBatchNorm over `group` (data parallel `--sync_bn`).
    pub fn with_sync_bn(mut self, group: device_sdaa::dist::ProcessGroup) -> ResNetModule {
        self.net.set_sync_bn(group);
        self
    }

    /// Build on the CPU with `seed`-determined initial weights.
    pub fn new(variant: Variant, num_classes: i64, hyper: Hyper, seed: u64) -> ResNetModule {
        tch::manual_seed(seed as i64);
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let net = ResNet::new(&vs.root(), variant, num_classes);
        if hyper.channels_last {
            tch::no_grad(|| {
                for (_, mut t) in vs.variables() {
                    if t.dim() == 4 {
                        let cl = to_channels_last(&t);
                        t.set_data(&cl);
                    }
                }
            });
        }
        ResNetModule {
            vs,
            net,
            hyper,
            num_classes,
        }
    }
}

impl BasicModule for ResNetModule {
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
        let images = if self.hyper.channels_last {
            to_channels_last(&batch.images)
        } else {
            batch.images
        };
        ImageBatch {
            images: device.to_device(&images),
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
    fn configure_optimizers(&self, steps_per_epoch: u64, _total_steps: u64) -> OptimizerConfig {
        let warmup_steps = (self.hyper.warmup_epochs * steps_per_epoch as f64).round() as u64;
        OptimizerConfig {
            lr: self.hyper.lr,
            algorithm: Algorithm::Sgd {
                momentum: self.hyper.momentum,
                nesterov: self.hyper.nesterov,
            },
            weight_decay: self.hyper.weight_decay,
            schedule: Schedule::WarmupCosine { warmup_steps },
            clip_grad_norm: self.hyper.clip_grad_norm,
        }
    }
}
