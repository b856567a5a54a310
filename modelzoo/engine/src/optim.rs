//! The engine's optimizers — SGD (momentum / nesterov), AdamW (decoupled weight decay) and
//! LAMB (layer-wise adaptive moments, BERT pretraining) — and the LR schedules.
//!
//! Written here rather than using tch's `nn::Sgd` / `nn::AdamW` because a checkpoint must hold
//! the optimizer state (libtorch's C++ optimizer state is not reachable through tch).

use std::f64::consts::PI;

use tch::{Kind, Tensor};

/// What a module asks of the optimizer ([`crate::BasicModule::configure_optimizers`]).
#[derive(Debug, Clone, PartialEq)]
pub struct OptimizerConfig {
    /// Peak learning rate (after warmup).
    pub lr: f64,
    pub algorithm: Algorithm,
    /// Weight decay, applied only to parameters with more than one dimension (conv, linear and
    /// embedding weights; never norm weights or biases): L2 added to the gradient for SGD,
    /// decoupled (`p -= lr × wd × p`) for AdamW.
    pub weight_decay: f64,
    pub schedule: Schedule,
    /// Clip the global gradient norm to this value.
    pub clip_grad_norm: Option<f64>,
}

/// The update rule, with its own hyper-parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Algorithm {
    /// `torch.optim.SGD` (dampening 0).
    Sgd { momentum: f64, nesterov: bool },
    /// `torch.optim.AdamW` (amsgrad off).
    AdamW {
        beta1: f64,
        beta2: f64,
        epsilon: f64,
    },
    /// LAMB (You et al., *Large Batch Optimization for Deep Learning: Training BERT in 76
    /// minutes*, Algorithm 2) as NVIDIA's BERT recipe runs it (apex `FusedLAMB`): Adam moments
    /// with bias correction, the update `r = m̂ / (√v̂ + ε) + λ·p`, and `p -= lr · φ · r` with
    /// the per-tensor trust ratio `φ = ‖p‖ / ‖r‖` (1 when either norm is 0) — for parameters
    /// with weight decay; the others (biases, LayerNorm) take `φ = 1`, as apex
    /// (`use_nvlamb=False`) and the MLPerf reference (`exclude_from_layer_adaptation`) do.
    /// Updated as multi-tensor `torch._foreach_*` ops ([`device_sdaa::optim::fused_lamb`]).
    Lamb {
        beta1: f64,
        beta2: f64,
        epsilon: f64,
    },
}

impl Algorithm {
    /// Names of the per-parameter state buffers, as stored in checkpoints
    /// (`optim/<param>` for a single buffer, `optim/<param>/<slot>` otherwise).
    fn slots(&self) -> &'static [&'static str] {
        match self {
            Algorithm::Sgd { .. } => &[""],
            Algorithm::AdamW { .. } | Algorithm::Lamb { .. } => &["exp_avg", "exp_avg_sq"],
        }
    }
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
    /// FleetX `CosineAnnealingWithWarmupDecay`: lr = base × step / warmup during warmup
    /// (0 at step 0), cosine from base to `min_lr` at `decay_steps`, then `min_lr` — fixed by
    /// the config, not by the run's length.
    WarmupCosineDecay {
        warmup_steps: u64,
        decay_steps: u64,
        min_lr: f64,
    },
    /// BERT pretraining's schedule over the update count k = step + 1 (the scheduler steps
    /// before each update): lr = base × k / warmup_steps while k < warmup_steps, then
    /// base × (1 − k / total)^degree, reaching 0 at the run's last update. FlagPerf's BERT
    /// `LinearWarmupPolyDecayScheduler` (end lr 0, degree 1.0) and NVIDIA's
    /// `PolyWarmUpScheduler` (degree 0.5) compute exactly this.
    PolyWarmup {
        warmup_steps: u64,
        degree: f64,
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
            Schedule::WarmupCosineDecay {
                warmup_steps,
                decay_steps,
                min_lr,
            } => {
                if warmup_steps > 0 && step <= warmup_steps {
                    return base * step as f64 / warmup_steps as f64;
                }
                if step > decay_steps {
                    return min_lr;
                }
                let span = decay_steps.saturating_sub(warmup_steps).max(1) as f64;
                let ratio = (step - warmup_steps) as f64 / span;
                min_lr + 0.5 * ((PI * ratio).cos() + 1.0) * (base - min_lr)
            }
            Schedule::PolyWarmup {
                warmup_steps,
                degree,
            } => {
                let k = step + 1;
                if k < warmup_steps {
                    return base * k as f64 / warmup_steps as f64;
                }
                let progress = (k as f64 / total_steps.max(1) as f64).min(1.0);
                base * (1.0 - progress).powf(degree)
            }
        }
    }
}

/// One parameter and its state buffers (one per [`Algorithm`] slot).
pub(crate) struct ParamState {
    pub name: String,
    pub param: Tensor,
    pub state: Vec<Tensor>,
    pub decay: bool,
}

/// The optimizer over a fixed, name-sorted list of parameters.
pub struct Optimizer {
    pub(crate) params: Vec<ParamState>,
    pub(crate) config: OptimizerConfig,
    /// Updates applied so far (AdamW bias correction; skipped fp16-overflow steps not counted).
    pub(crate) updates: u64,
}

impl Optimizer {
    /// `named` = the trainable parameters (already on the training device), sorted by name.
    pub fn new(named: Vec<(String, Tensor)>, config: OptimizerConfig) -> Optimizer {
        let slots = config.algorithm.slots().len();
        let params = named
            .into_iter()
            .map(|(name, param)| {
                let state = (0..slots)
                    .map(|_| tch::no_grad(|| param.zeros_like()))
                    .collect();
                let decay = param.dim() > 1;
                ParamState {
                    name,
                    param,
                    state,
                    decay,
                }
            })
            .collect();
        Optimizer {
            params,
            config,
            updates: 0,
        }
    }

    /// (checkpoint key, buffer) of every state tensor.
    pub(crate) fn state_entries(&self) -> Vec<(String, &Tensor)> {
        let slots = self.config.algorithm.slots();
        let mut out = Vec::new();
        for p in &self.params {
            for (slot, t) in slots.iter().zip(&p.state) {
                let key = if slot.is_empty() {
                    format!("optim/{}", p.name)
                } else {
                    format!("optim/{}/{slot}", p.name)
                };
                out.push((key, t));
            }
        }
        out
    }

    /// Gradients of all parameters that have one.
    pub fn grads(&self) -> Vec<Tensor> {
        self.params
            .iter()
            .map(|p| p.param.grad())
            .filter(|g| g.defined())
            .collect()
    }

    /// Drop every gradient (`zero_grad()`'s default, `set_to_none=True`): the next backward
    /// writes fresh gradients instead of adding into zero-filled buffers.
    pub fn zero_grad(&mut self) {
        let params: Vec<&Tensor> = self.params.iter().map(|p| &p.param).collect();
        if let Err(e) = device_sdaa::optim::set_grads_to_none(&params) {
            tracing::debug!("{e}; zero-filling the gradients instead");
            for p in &self.params {
                let mut g = p.param.grad();
                if g.defined() {
                    let _ = g.zero_();
                }
            }
        }
    }

    /// One update at learning rate `lr` (PyTorch's `SGD` / `AdamW` semantics, LAMB as apex
    /// computes it). Parameters on the CPU or CUDA go through libtorch's fused kernels
    /// (`fused=True` in torch.optim; LAMB: multi-tensor `_foreach_*` ops), one call per
    /// weight-decay group (channels-last weights included); any other (an SDAA tensor, a
    /// non-dense layout) takes the single-tensor update torch.optim uses by default. An error
    /// is a failed LAMB update (out of memory), which may have changed the moments already.
    pub fn step(&mut self, lr: f64) -> Result<(), device_sdaa::DeviceError> {
        self.updates += 1;
        let (algorithm, wd, step) = (
            self.config.algorithm,
            self.config.weight_decay,
            self.updates,
        );
        let grads: Vec<Tensor> = self.params.iter().map(|p| p.param.grad()).collect();
        // Fused groups: (decays, dtype, device) -> parameter indices.
        let mut groups: Vec<((bool, Kind, tch::Device), Vec<usize>)> = Vec::new();
        let mut single = Vec::new();
        for (i, (p, g)) in self.params.iter().zip(&grads).enumerate() {
            if !g.defined() {
                continue;
            }
            let mut all = vec![&p.param, g];
            all.extend(p.state.iter());
            if !device_sdaa::optim::fusable(&all) {
                single.push(i);
                continue;
            }
            let key = (p.decay, p.param.kind(), p.param.device());
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, members)) => members.push(i),
                None => groups.push((key, vec![i])),
            }
        }
        for ((decay, _, _), members) in groups {
            let group_wd = if decay { wd } else { 0.0 };
            if let Err(e) = self.fused_update(&members, &grads, algorithm, lr, group_wd, step) {
                // LAMB's multi-tensor ops may fail after changing the moments: a second update
                // would apply the step twice.
                if matches!(algorithm, Algorithm::Lamb { .. }) {
                    return Err(e);
                }
                tracing::debug!("{e}; single-tensor update instead");
                single.extend(members);
            }
        }
        tch::no_grad(|| {
            for i in single {
                let p = &mut self.params[i];
                let group_wd = if p.decay { wd } else { 0.0 };
                single_tensor_update(p, grads[i].shallow_clone(), algorithm, lr, group_wd, step);
            }
        });
        Ok(())
    }

    fn fused_update(
        &self,
        members: &[usize],
        grads: &[Tensor],
        algorithm: Algorithm,
        lr: f64,
        weight_decay: f64,
        step: u64,
    ) -> Result<(), device_sdaa::DeviceError> {
        let params: Vec<&Tensor> = members.iter().map(|&i| &self.params[i].param).collect();
        let grads: Vec<&Tensor> = members.iter().map(|&i| &grads[i]).collect();
        let slot = |s: usize| -> Vec<&Tensor> {
            members.iter().map(|&i| &self.params[i].state[s]).collect()
        };
        match algorithm {
            Algorithm::Sgd { momentum, nesterov } => device_sdaa::optim::fused_sgd(
                &params,
                &grads,
                &slot(0),
                device_sdaa::optim::Sgd {
                    lr,
                    momentum,
                    weight_decay,
                    nesterov,
                },
            ),
            Algorithm::AdamW {
                beta1,
                beta2,
                epsilon,
            }
            | Algorithm::Lamb {
                beta1,
                beta2,
                epsilon,
            } => {
                let update = if matches!(algorithm, Algorithm::Lamb { .. }) {
                    device_sdaa::optim::fused_lamb
                } else {
                    device_sdaa::optim::fused_adamw
                };
                let h = device_sdaa::optim::AdamW {
                    lr,
                    beta1,
                    beta2,
                    eps: epsilon,
                    weight_decay,
                    step,
                };
                update(&params, &grads, &slot(0), &slot(1), h)
            }
        }
    }

    /// The update count as a tensor, for checkpoints.
    pub(crate) fn updates_tensor(&self) -> Tensor {
        Tensor::from_slice(&[self.updates as i64]).to_kind(Kind::Int64)
    }
}

/// torch.optim's default single-tensor update of one parameter (under no_grad), in place
/// where torch's is; `weight_decay` is the parameter's group's.
fn single_tensor_update(
    p: &mut ParamState,
    mut g: Tensor,
    algorithm: Algorithm,
    lr: f64,
    weight_decay: f64,
    step: u64,
) {
    match algorithm {
        Algorithm::Sgd { momentum, nesterov } => {
            if weight_decay != 0.0 {
                g = &g + &p.param * weight_decay;
            }
            let update = if momentum != 0.0 {
                let buf = &mut p.state[0];
                let _ = buf.g_mul_scalar_(momentum).g_add_(&g);
                if nesterov {
                    &g + &*buf * momentum
                } else {
                    buf.shallow_clone()
                }
            } else {
                g
            };
            let _ = p.param.g_sub_(&(update * lr));
        }
        Algorithm::AdamW {
            beta1,
            beta2,
            epsilon,
        } => {
            if weight_decay != 0.0 {
                let _ = p.param.g_mul_scalar_(1.0 - lr * weight_decay);
            }
            let g = g.to_kind(p.state[0].kind());
            let _ = p.state[0].lerp_(&g, 1.0 - beta1);
            let _ = p.state[1]
                .g_mul_scalar_(beta2)
                .addcmul_(&g, &(&g * (1.0 - beta2)));
            if lr == 0.0 {
                return;
            }
            let bc1 = 1.0 - beta1.powi(step as i32);
            let bc2 = 1.0 - beta2.powi(step as i32);
            // param += exp_avg / denom with denom = -(√v̂ + ε)·bc1/lr: one temporary, no
            // step-sized copy of exp_avg.
            let mut denom = p.state[1].sqrt();
            let _ = denom
                .g_div_scalar_(bc2.sqrt())
                .g_add_scalar_(epsilon)
                .g_mul_scalar_(-bc1 / lr);
            let _ = p
                .param
                .addcdiv_(&p.state[0], &denom.to_kind(p.param.kind()));
        }
        Algorithm::Lamb {
            beta1,
            beta2,
            epsilon,
        } => {
            let g = g.to_kind(p.state[0].kind());
            let _ = p.state[0].lerp_(&g, 1.0 - beta1);
            let _ = p.state[1]
                .g_mul_scalar_(beta2)
                .addcmul_(&g, &(&g * (1.0 - beta2)));
            let bc1 = 1.0 - beta1.powi(step as i32);
            let bc2 = 1.0 - beta2.powi(step as i32);
            let mut update = (&p.state[0] / bc1) / ((&p.state[1] / bc2).sqrt() + epsilon);
            if weight_decay != 0.0 {
                let w = p.param.to_kind(update.kind());
                update += &w * weight_decay;
                // The trust ratio stays on the device: no synchronisation per tensor.
                let (wn, un) = (w.norm(), update.norm());
                let usable = wn.gt(0.0).logical_and(&un.gt(0.0));
                let ratio = (&wn / &un).where_self(&usable, &wn.ones_like());
                update *= ratio;
            }
            let _ = p.param.g_sub_(&(update * lr).to_kind(p.param.kind()));
        }
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
            algorithm: Algorithm::Sgd {
                momentum: 0.9,
                nesterov: true,
            },
            weight_decay: 0.01,
            schedule: Schedule::Constant,
            clip_grad_norm: None,
        };
        let mut sgd = Optimizer::new(vec![("w".into(), w.shallow_clone())], cfg);
        let (mut wv, mut buf) = ([1.0f64, 2.0], [0.0f64, 0.0]);
        let grad = [0.5f64, -1.0];
        for _ in 0..2 {
            sgd.zero_grad();
            let loss =
                (&w * Tensor::from_slice(&[0.5f32, -1.0]).reshape([1, 2])).sum(tch::Kind::Float);
            loss.backward();
            sgd.step(0.1).unwrap();
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

    #[test]
    fn matches_torch_adamw_with_decoupled_decay_on_matrices_only() {
        // Reference: torch 2.11 torch.optim.AdamW(lr=0.01, betas=(0.8, 0.95), eps=1e-6) with
        // weight_decay 0.1 on w (2-D) and 0 on b (1-D), float64, three steps of
        // loss = sum(w * [0.5, -1] * (i + 1)) + sum(b * b):
        // w = [[0.9674710302967927, 2.023537987275603]], b = [0.4700336987499041].
        let w = Tensor::from_slice(&[1.0f64, 2.0])
            .reshape([1, 2])
            .set_requires_grad(true);
        let b = Tensor::from_slice(&[0.5f64]).set_requires_grad(true);
        let cfg = OptimizerConfig {
            lr: 0.01,
            algorithm: Algorithm::AdamW {
                beta1: 0.8,
                beta2: 0.95,
                epsilon: 1e-6,
            },
            weight_decay: 0.1,
            schedule: Schedule::Constant,
            clip_grad_norm: None,
        };
        let mut opt = Optimizer::new(
            vec![
                ("b".into(), b.shallow_clone()),
                ("w".into(), w.shallow_clone()),
            ],
            cfg,
        );
        let k = Tensor::from_slice(&[0.5f64, -1.0]).reshape([1, 2]);
        for i in 0..3 {
            opt.zero_grad();
            let loss = (&w * &k * (i + 1) as f64).sum(tch::Kind::Double)
                + (&b * &b).sum(tch::Kind::Double);
            loss.backward();
            opt.step(0.01).unwrap();
        }
        let wv: Vec<f64> = w.flatten(0, -1).try_into().unwrap();
        let bv: Vec<f64> = b.try_into().unwrap();
        let want = [0.9674710302967927, 2.023537987275603];
        for i in 0..2 {
            assert!((wv[i] - want[i]).abs() < 1e-12, "{wv:?} vs {want:?}");
        }
        assert!((bv[0] - 0.4700336987499041).abs() < 1e-12, "{bv:?}");
        assert_eq!(opt.state_entries().len(), 4);
        assert_eq!(opt.state_entries()[0].0, "optim/b/exp_avg");
    }

    /// `shape` filled from `values` as a leaf needing grad: contiguous, channels-last, or a
    /// strided slice (not dense, so the single-tensor update takes it).
    fn leaf(values: &Tensor, layout: &str) -> Tensor {
        let t = match layout {
            "contiguous" => values.copy(),
            "channels_last" => values
                .permute([0, 2, 3, 1])
                .contiguous()
                .permute([0, 3, 1, 2]),
            _ => Tensor::cat(&[values, values], 3).slice(3, 0, values.size()[3], 1),
        };
        t.detach().set_requires_grad(true)
    }

    #[test]
    fn fused_and_single_tensor_updates_agree_for_every_layout() {
        tch::manual_seed(7);
        let start = Tensor::randn([2, 3, 4, 5], (Kind::Float, tch::Device::Cpu));
        let k = Tensor::randn([2, 3, 4, 5], (Kind::Float, tch::Device::Cpu));
        for algorithm in [
            Algorithm::Sgd {
                momentum: 0.9,
                nesterov: true,
            },
            Algorithm::AdamW {
                beta1: 0.9,
                beta2: 0.95,
                epsilon: 1e-8,
            },
            Algorithm::Lamb {
                beta1: 0.9,
                beta2: 0.999,
                epsilon: 1e-6,
            },
        ] {
            let cfg = OptimizerConfig {
                lr: 0.05,
                algorithm,
                weight_decay: 0.1,
                schedule: Schedule::Constant,
                clip_grad_norm: None,
            };
            let mut out = Vec::new();
            for layout in ["contiguous", "channels_last", "strided"] {
                let w = leaf(&start, layout);
                let mut opt = Optimizer::new(vec![("w".into(), w.shallow_clone())], cfg.clone());
                for _ in 0..3 {
                    ((&w * &k).sum(Kind::Float) + (&w * &w).sum(Kind::Float)).backward();
                    let fused =
                        device_sdaa::optim::fusable(&[&w, &w.grad(), &opt.params[0].state[0]]);
                    assert_eq!(fused, layout != "strided", "{layout}: fused path taken");
                    opt.step(0.05).unwrap();
                    opt.zero_grad();
                    assert!(!w.grad().defined(), "zero_grad drops the gradient");
                }
                out.push((layout, w.detach().contiguous()));
            }
            let moved = (&out[0].1 - &start).abs().max().double_value(&[]);
            assert!(moved > 1e-3, "{algorithm:?} moved the weights ({moved})");
            for (layout, w) in &out[1..] {
                let diff = (w - &out[0].1).abs().max().double_value(&[]);
                assert!(
                    diff < 1e-6,
                    "{algorithm:?}: {layout} differs from contiguous by {diff}"
                );
            }
        }
    }

    /// FlagPerf's `LinearWarmupPolyDecayScheduler(warmup_steps=4, total_steps=20,
    /// degree=1.0)` / NVIDIA's `PolyWarmUpScheduler(warmup=0.2, total_steps=20, degree=0.5)`
    /// as their `get_lr` computes it for the k-th update (last_epoch = k), by hand.
    #[test]
    fn poly_warmup_is_flagperf_and_nvidia_bert_schedule() {
        for degree in [1.0, 0.5] {
            let s = Schedule::PolyWarmup {
                warmup_steps: 4,
                degree,
            };
            for step in 0..25u64 {
                let k = (step + 1) as f64;
                let want = if k < 4.0 {
                    k / 4.0
                } else {
                    (1.0 - (k / 20.0).min(1.0)).powf(degree)
                };
                let got = s.lr_at(2.0, step, 20);
                assert!(
                    (got - 2.0 * want).abs() < 1e-12,
                    "step {step}: {got} vs {want}"
                );
            }
        }
        let s = Schedule::PolyWarmup {
            warmup_steps: 4,
            degree: 1.0,
        };
        assert!((s.lr_at(1.0, 0, 20) - 0.25).abs() < 1e-12);
        assert!(
            (s.lr_at(1.0, 3, 20) - 0.8).abs() < 1e-12,
            "k = 4: decay 1 - 4/20"
        );
        assert!((s.lr_at(1.0, 9, 20) - 0.5).abs() < 1e-12);
        assert_eq!(s.lr_at(1.0, 19, 20), 0.0, "the last update");
        let sqrt = Schedule::PolyWarmup {
            warmup_steps: 0,
            degree: 0.5,
        };
        assert!(
            (sqrt.lr_at(1.0, 14, 20) - 0.5).abs() < 1e-12,
            "sqrt(1 - 15/20)"
        );
    }

    /// LAMB against an independent implementation of the paper's update (You et al. 2020,
    /// Algorithm 2, with apex FusedLAMB's choices: bias-corrected Adam moments, λ inside the
    /// trust-ratio norm, ratio 1 where a norm is 0 and for parameters without weight decay),
    /// written element by element in f64 here. Three tensors: a decayed matrix, a bias (no
    /// decay, so no trust ratio) and an all-zero matrix (‖p‖ = 0 → ratio 1). Tolerance 1e-12
    /// in float64 (the same arithmetic in another order); a missing bias correction, trust
    /// ratio or decay term moves the result by 1e-4 or more. Both paths: the multi-tensor
    /// update (dense parameters, the two decayed ones in one call) and the single-tensor one
    /// (strided parameters).
    #[test]
    fn lamb_matches_the_papers_formula() {
        lamb_against_the_paper(false);
        lamb_against_the_paper(true);
    }

    fn lamb_against_the_paper(strided: bool) {
        let (b1, b2, eps, wd) = (0.9, 0.999, 1e-6, 0.01);
        let shapes: [(&str, Vec<i64>, Vec<f64>); 3] = [
            ("a_w", vec![2, 3], vec![0.3, -1.2, 0.8, 2.0, -0.4, 0.1]),
            ("b_bias", vec![3], vec![0.5, -0.25, 0.0]),
            ("c_zero", vec![2, 2], vec![0.0; 4]),
        ];
        let params: Vec<Tensor> = shapes
            .iter()
            .map(|(_, shape, v)| {
                let t = Tensor::from_slice(v).reshape(shape.as_slice());
                let t = if strided {
                    Tensor::stack(&[&t, &t], -1).select(-1, 0)
                } else {
                    t
                };
                t.detach().set_requires_grad(true)
            })
            .collect();
        let cfg = OptimizerConfig {
            lr: 0.1,
            algorithm: Algorithm::Lamb {
                beta1: b1,
                beta2: b2,
                epsilon: eps,
            },
            weight_decay: wd,
            schedule: Schedule::Constant,
            clip_grad_norm: None,
        };
        let named = shapes
            .iter()
            .zip(&params)
            .map(|((n, _, _), p)| (n.to_string(), p.shallow_clone()))
            .collect();
        let mut opt = Optimizer::new(named, cfg);
        // The reference: plain f64 vectors.
        let mut x: Vec<Vec<f64>> = shapes.iter().map(|s| s.2.clone()).collect();
        let mut m: Vec<Vec<f64>> = x.iter().map(|v| vec![0.0; v.len()]).collect();
        let mut v = m.clone();
        let decays = [true, false, true];
        // grad of sum(p * p * c + p * d) = 2 c p + d, different per step.
        let grad_of =
            |p: f64, j: usize, t: usize| 2.0 * 0.3 * (t + 1) as f64 * p + (j as f64 - 1.5) * 0.7;
        for t in 0..3usize {
            let lr = [0.1, 0.05, 0.2][t];
            opt.zero_grad();
            let mut loss = Tensor::zeros([], (Kind::Double, tch::Device::Cpu));
            for p in &params {
                let n = p.numel() as i64;
                let d = (Tensor::arange(n, (Kind::Double, tch::Device::Cpu)) - 1.5) * 0.7;
                let flat = p.flatten(0, -1);
                loss = loss
                    + (&flat * &flat * (0.3 * (t + 1) as f64)).sum(Kind::Double)
                    + (&flat * d).sum(Kind::Double);
            }
            loss.backward();
            let p0 = &opt.params[0];
            let fused = device_sdaa::optim::fusable(&[&p0.param, &p0.param.grad(), &p0.state[0]]);
            assert_eq!(fused, !strided, "multi-tensor path taken");
            opt.step(lr).unwrap();
            let step = (t + 1) as i32;
            for i in 0..3 {
                let g: Vec<f64> = x[i]
                    .iter()
                    .enumerate()
                    .map(|(j, &p)| grad_of(p, j, t))
                    .collect();
                let mut r = vec![0.0; g.len()];
                for j in 0..g.len() {
                    m[i][j] = b1 * m[i][j] + (1.0 - b1) * g[j];
                    v[i][j] = b2 * v[i][j] + (1.0 - b2) * g[j] * g[j];
                    let mh = m[i][j] / (1.0 - b1.powi(step));
                    let vh = v[i][j] / (1.0 - b2.powi(step));
                    r[j] = mh / (vh.sqrt() + eps);
                    if decays[i] {
                        r[j] += wd * x[i][j];
                    }
                }
                let norm = |a: &[f64]| a.iter().map(|e| e * e).sum::<f64>().sqrt();
                let (xn, rn) = (norm(&x[i]), norm(&r));
                let ratio = if decays[i] && xn > 0.0 && rn > 0.0 {
                    xn / rn
                } else {
                    1.0
                };
                for j in 0..g.len() {
                    x[i][j] -= lr * ratio * r[j];
                }
            }
        }
        for (i, p) in params.iter().enumerate() {
            let got: Vec<f64> = p.flatten(0, -1).try_into().unwrap();
            for (a, b) in got.iter().zip(&x[i]) {
                assert!(
                    (a - b).abs() < 1e-12,
                    "{}: {got:?} vs {:?}",
                    shapes[i].0,
                    x[i]
                );
            }
            // It moved (the check is not vacuous).
            assert!(got
                .iter()
                .zip(&shapes[i].2)
                .any(|(a, b)| (a - b).abs() > 1e-3));
        }
        assert_eq!(opt.state_entries().len(), 6);
    }

    #[test]
    fn fleetx_cosine_warmup_decay() {
        let s = Schedule::WarmupCosineDecay {
            warmup_steps: 10,
            decay_steps: 110,
            min_lr: 0.1,
        };
        assert_eq!(s.lr_at(1.0, 0, 5), 0.0);
        assert!((s.lr_at(1.0, 5, 5) - 0.5).abs() < 1e-12);
        assert!((s.lr_at(1.0, 10, 5) - 1.0).abs() < 1e-12);
        assert!((s.lr_at(1.0, 60, 5) - 0.55).abs() < 1e-12);
        assert!((s.lr_at(1.0, 110, 5) - 0.1).abs() < 1e-12);
        assert_eq!(s.lr_at(1.0, 500, 5), 0.1);
    }
}
