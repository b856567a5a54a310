//! The network: replace this two-layer perceptron with the model being ported, keeping the
//! reference implementation's parameter names.

use tch::nn::{self, Module};
use tch::Tensor;

/// A two-layer perceptron over flattened images.
#[derive(Debug)]
pub struct Net {
    fc1: nn::Linear,
    fc2: nn::Linear,
}

impl Net {
    /// The layers under `p`: `fc1` (inputs → 64) and `fc2` (64 → `classes`).
    pub fn new(p: &nn::Path, inputs: i64, classes: i64) -> Net {
        Net {
            fc1: nn::linear(p / "fc1", inputs, 64, Default::default()),
            fc2: nn::linear(p / "fc2", 64, classes, Default::default()),
        }
    }
}

impl Module for Net {
    fn forward(&self, x: &Tensor) -> Tensor {
        self.fc2.forward(&self.fc1.forward(&x.flatten(1, -1)).relu())
    }
}
