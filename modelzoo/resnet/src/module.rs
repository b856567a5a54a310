//! ResNet as an engine [`BasicModule`]: cross-entropy with label smoothing, top-1/top-5, SGD
//! with warmup-cosine, optional channels-last, and uint8 image batches normalised on the
//! device.

use modelzoo_engine::{Algorithm, BasicModule, EvalOutput, OptimizerConfig, Schedule, TrainDevice};
use modelzoo_vision::{DeviceNormalizer, ImageBatch, Normalize};
use tch::nn::{self, ModuleT};
use tch::{Kind, Reduction, Tensor};

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
    /// How uint8 batches become the network's input (ImageNet's statistics unless the loader
    /// says otherwise: [`ResNetModule::with_input_normalization`]).
    input: DeviceNormalizer,
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
        let mut net = ResNet::new(&vs.root(), variant, num_classes);
        net.set_fused_bn_relu(hyper.channels_last);
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
            input: DeviceNormalizer::new(Normalize::IMAGENET),
        }
    }

    /// The statistics uint8 batches are normalised with on the device (the loader's
    /// `Loader::normalization`; `None` keeps ImageNet's). Float batches arrive normalised.
    pub fn with_input_normalization(mut self, norm: Option<Normalize>) -> ResNetModule {
        if let Some(n) = norm {
            self.input = DeviceNormalizer::new(n);
        }
        self
    }

    /// The network's input from a batch's `images` on the host: uint8 `[n, h, w, 3]` pixels are
    /// copied to the device as they are (a quarter of fp32's bytes) and normalised there in the
    /// network's memory format; float `[n, 3, h, w]` values are laid out, then copied.
    /// Either way the device's own conversion of a float input (the `--dump` device's fp64)
    /// applies last, as it did to the float batches alone.
    pub fn input(&mut self, images: &Tensor, device: &dyn TrainDevice) -> Tensor {
        if images.kind() == Kind::Uint8 {
            let x = self
                .input
                .apply(&device.to_device(images), self.hyper.channels_last);
            return device.to_device(&x);
        }
        let images = if self.hyper.channels_last {
            to_channels_last(images)
        } else {
            images.shallow_clone()
        };
        device.to_device(&images)
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
        ImageBatch {
            images: self.input(&batch.images, device),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Variant;

    fn module(channels_last: bool) -> ResNetModule {
        let hyper = Hyper {
            lr: 0.1,
            momentum: 0.9,
            nesterov: false,
            weight_decay: 0.0,
            label_smoothing: 0.0,
            warmup_epochs: 0.0,
            clip_grad_norm: None,
            channels_last,
        };
        ResNetModule::new(Variant::ResNet18, 10, hyper, 1)
            .with_input_normalization(Some(Normalize::CIFAR))
    }

    #[test]
    fn uint8_input_is_the_float_input_normalised_in_the_model_s_memory_format() {
        let (n, h, w) = (2i64, 5i64, 7i64);
        let pixels: Vec<u8> = (0..n * h * w * 3).map(|i| (i * 37 % 256) as u8).collect();
        let nhwc = Tensor::from_slice(&pixels).view([n, h, w, 3]);
        // The float batch the host path builds: CHW values of Normalize::value.
        let norm = Normalize::CIFAR;
        let mut chw = vec![0f32; pixels.len()];
        for (k, sample) in pixels.chunks_exact((h * w * 3) as usize).enumerate() {
            let plane = (h * w) as usize;
            norm.hwc_to_chw(sample, &mut chw[k * 3 * plane..(k + 1) * 3 * plane]);
        }
        let float = Tensor::from_slice(&chw).view([n, 3, h, w]);
        let device = tch::Device::Cpu;
        for channels_last in [false, true] {
            let mut m = module(channels_last);
            let from_u8 = m.input(&nhwc, &device);
            let from_f32 = m.input(&float, &device);
            assert_eq!(from_u8.kind(), Kind::Float);
            assert_eq!(
                from_u8.stride(),
                from_f32.stride(),
                "channels_last {channels_last}"
            );
            let d = (&from_u8 - &from_f32).abs().max().double_value(&[]);
            assert!(d <= 1e-6, "channels_last {channels_last}: max |diff| {d}");
        }
    }
}
