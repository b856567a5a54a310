//! {{title}} as an engine `BasicModule`: cross-entropy, top-1/top-5, SGD.

use modelzoo_engine::{Algorithm, BasicModule, EvalOutput, OptimizerConfig, Schedule, TrainDevice};
use modelzoo_vision::ImageBatch;
use tch::nn::{self, Module};
use tch::Tensor;

use crate::model::Net;

/// The network, its variables and its learning rate.
pub struct Module{{Camel}} {
    vs: nn::VarStore,
    net: Net,
    lr: f64,
}

impl Module{{Camel}} {
    /// Built on the CPU with `seed`-determined weights; the engine moves it to the device.
    pub fn new(image_size: i64, classes: i64, lr: f64, seed: u64) -> Self {
        tch::manual_seed(seed as i64);
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let net = Net::new(&vs.root(), 3 * image_size * image_size, classes);
        Module{{Camel}} { vs, net, lr }
    }
}

impl BasicModule for Module{{Camel}} {
    type Batch = ImageBatch;
    fn var_store(&self) -> &nn::VarStore {
        &self.vs
    }
    fn var_store_mut(&mut self) -> &mut nn::VarStore {
        &mut self.vs
    }
    fn pretreating_batch(&mut self, b: ImageBatch, device: &dyn TrainDevice) -> ImageBatch {
        ImageBatch {
            images: device.to_device(&b.images),
            labels: device.to_device(&b.labels),
        }
    }
    fn items_in(&self, b: &ImageBatch) -> usize {
        b.len()
    }
    fn ips_unit(&self) -> &'static str {
        "imgs/s"
    }
    fn val_metric_meta(&self) -> Vec<(&'static str, &'static str, &'static str)> {
        vec![("val.top1", "%", "MAXIMIZE"), ("val.top5", "%", "MAXIMIZE")]
    }
    fn training_step(&mut self, b: &ImageBatch) -> Tensor {
        self.net.forward(&b.images).cross_entropy_for_logits(&b.labels)
    }
    fn validation_step(&mut self, b: &ImageBatch) -> EvalOutput {
        let logits = self.net.forward(&b.images);
        modelzoo_vision::classification_eval(&logits, &b.labels, logits.size()[1])
    }
    fn test_step(&mut self, b: &ImageBatch) -> Tensor {
        self.net.forward(&b.images).argmax(1, false)
    }
    fn configure_optimizers(&self, _steps_per_epoch: u64, _total_steps: u64) -> OptimizerConfig {
        OptimizerConfig {
            lr: self.lr,
            algorithm: Algorithm::Sgd {
                momentum: 0.9,
                nesterov: false,
            },
            weight_decay: 0.0,
            schedule: Schedule::Constant,
            clip_grad_norm: None,
        }
    }
}
