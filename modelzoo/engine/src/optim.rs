//! SGD with momentum / nesterov and decoupled-by-shape weight decay, and the LR schedule.
//!
//! Written here rather than using tch's `nn::Sgd` because a checkpoint must hold the momentum
//! buffers (libtorch's C++ optimizer state is not reachable through tch).

use std::f64::consts::PI;

use tch::Tensor;

/// What a module asks of the optimizer ([`crate::BasicModule::configure_optimizers`]).
#[derive(Debug, Clone, PartialEq)]
pub struct OptimizerConfig {
    /// Peak learning rate (after warmup).
    pub lr: f64,
    pub momentum: f64,
    pub nesterov: bool,
    /// L2 weight decay, applied only to parameters with more than one dimension (conv and
    /// linear weights; never BN weights or biases).
    pub weight_decay: f64,
    pub schedule: Schedule,
    /// Clip the global gradient norm to this value.
    pub clip_grad_norm: Option<f64>,
}

/// Learning-rate schedule over optimizer steps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Schedule {
    Constant,
    /// Linear warmup from lr/warmup_steps to lr over `warmup_steps`, then cosine decay to 0 at
    /// the run's last step.
    WarmupCosine {
        warmup_steps: u64,
    },
}

impl Schedule {
    /// The learning rate for optimizer step `step` (0-based) of `total_steps`.
    pub fn lr_at(&self, base: f64, step: u64, total_steps: u64) -> f64 {
        match *self {
            Schedule::Constant => base,
            Schedule::WarmupCosine { warmup_steps } => {
                if step < warmup_steps {
                    return base * (step + 1) as f64 / warmup_steps as f64;
                }
                let span = total_steps.saturating_sub(warmup_steps).max(1) as f64;
                let t = ((step - warmup_steps) as f64 / span).min(1.0);
                0.5 * base * (1.0 + (PI * t).cos())
            }
        }
    }
}

/// One parameter and its momentum buffer.
pub(crate) struct ParamState {
    pub name: String,
    pub param: Tensor,
    pub momentum: Tensor,
    pub decay: bool,
}

/// SGD over a fixed, name-sorted list of parameters.
pub struct Sgd {
    pub(crate) params: Vec<ParamState>,
    pub(crate) config: OptimizerConfig,
}

impl Sgd {
    /// `named` = the trainable parameters (already on the training device), sorted by name.
    pub fn new(named: Vec<(String, Tensor)>, config: OptimizerConfig) -> Sgd {
        let params = named
            .into_iter()
            .map(|(name, param)| {
                let momentum = tch::no_grad(|| param.zeros_like());
                let decay = param.dim() > 1;
                ParamState {
                    name,
                    param,
                    momentum,
                    decay,
                }
            })
            .collect();
        Sgd { params, config }
    }

    /// Gradients of all parameters that have one.
    pub fn grads(&self) -> Vec<Tensor> {
        self.params
            .iter()
            .map(|p| p.param.grad())
            .filter(|g| g.defined())
            .collect()
    }

    /// Set every gradient to zero (keeps the buffers, like `zero_grad(set_to_none=False)`).
    pub fn zero_grad(&mut self) {
        for p in &mut self.params {
            let mut g = p.param.grad();
            if g.defined() {
                let _ = g.zero_();
            }
        }
    }

    /// One SGD step at learning rate `lr` (PyTorch's `torch.optim.SGD` semantics, dampening 0).
    pub fn step(&mut self, lr: f64) {
        let OptimizerConfig {
            momentum,
            nesterov,
            weight_decay,
            ..
        } = self.config;
        tch::no_grad(|| {
            for p in &mut self.params {
                let mut g = p.param.grad();
                if !g.defined() {
                    continue;
                }
                if p.decay && weight_decay != 0.0 {
                    let _ = g.g_add_(&(&p.param * weight_decay));
                }
                let update = if momentum != 0.0 {
                    let _ = p.momentum.g_mul_scalar_(momentum).g_add_(&g);
                    if nesterov {
                        &g + &p.momentum * momentum
                    } else {
                        p.momentum.shallow_clone()
                    }
                } else {
                    g
                };
                let _ = p.param.g_sub_(&(update * lr));
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warmup_then_cosine() {
        let s = Schedule::WarmupCosine { warmup_steps: 4 };
        assert!((s.lr_at(1.0, 0, 100) - 0.25).abs() < 1e-12);
        assert!((s.lr_at(1.0, 3, 100) - 1.0).abs() < 1e-12);
        assert!((s.lr_at(1.0, 4, 100) - 1.0).abs() < 1e-12);
        assert!((s.lr_at(1.0, 52, 100) - 0.5).abs() < 1e-12);
        assert!(s.lr_at(1.0, 100, 100).abs() < 1e-12);
    }

    #[test]
    fn matches_torch_sgd_momentum_nesterov_and_decay() {
        // Reference from torch.optim.SGD(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)
        // on w=[1,2] (2-D) with grad [0.5,-1] applied twice: computed by hand below.
        let w = Tensor::from_slice(&[1.0f32, 2.0])
            .reshape([1, 2])
            .set_requires_grad(true);
        let cfg = OptimizerConfig {
            lr: 0.1,
            momentum: 0.9,
            nesterov: true,
            weight_decay: 0.01,
            schedule: Schedule::Constant,
            clip_grad_norm: None,
        };
        let mut sgd = Sgd::new(vec![("w".into(), w.shallow_clone())], cfg);
        let (mut wv, mut buf) = ([1.0f64, 2.0], [0.0f64, 0.0]);
        let grad = [0.5f64, -1.0];
        for _ in 0..2 {
            sgd.zero_grad();
            let loss =
                (&w * Tensor::from_slice(&[0.5f32, -1.0]).reshape([1, 2])).sum(tch::Kind::Float);
            loss.backward();
            sgd.step(0.1);
            for i in 0..2 {
                let g = grad[i] + 0.01 * wv[i];
                buf[i] = 0.9 * buf[i] + g;
                wv[i] -= 0.1 * (g + 0.9 * buf[i]);
            }
        }
        let got: Vec<f32> = w.flatten(0, -1).try_into().unwrap();
        for i in 0..2 {
            assert!((got[i] as f64 - wv[i]).abs() < 1e-6, "{got:?} vs {wv:?}");
        }
    }
}
