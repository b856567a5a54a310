//! Dynamic loss scaling for fp16 training (PyTorch's `GradScaler`), on libtorch's own
//! `_amp_update_scale_` op. tch has no `_amp_foreach_non_finite_check_and_unscale_`, so the
//! unscale is a multiply per gradient and the inf/nan check reads the global gradient norm,
//! which the step computes anyway for clipping.

use tch::{Kind, Tensor};

/// Loss-scale state: the scale and the count of consecutive finite steps, both on the device.
pub struct GradScaler {
    pub(crate) scale: Tensor,
    pub(crate) growth_tracker: Tensor,
    growth_factor: f64,
    backoff_factor: f64,
    growth_interval: i64,
}

impl GradScaler {
    /// A scaler starting at `init_scale` (FleetX `scale_loss`, PyTorch default 65536), with
    /// PyTorch's growth 2.0 / backoff 0.5 / interval 2000.
    pub fn new(init_scale: f64, on: impl Fn(&Tensor) -> Tensor) -> GradScaler {
        GradScaler {
            scale: on(&Tensor::from_slice(&[init_scale as f32])),
            growth_tracker: on(&Tensor::from_slice(&[0i32])),
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 2000,
        }
    }

    /// `loss * scale`.
    pub fn scale_loss(&self, loss: &Tensor) -> Tensor {
        loss * &self.scale.to_kind(loss.kind())
    }

    /// Divide every gradient by the scale in place.
    pub fn unscale(&self, grads: &mut [Tensor]) {
        let inv = self
            .scale
            .to_kind(Kind::Double)
            .reciprocal()
            .to_kind(Kind::Float);
        tch::no_grad(|| {
            for g in grads.iter_mut() {
                let _ = g.g_mul_(&inv.to_kind(g.kind()));
            }
        });
    }

    /// Update the scale from `found_inf` (a 1-element float tensor, 1.0 = overflow).
    pub fn update(&mut self, found_inf: &Tensor) {
        let _ = self.scale.internal_amp_update_scale_(
            &self.growth_tracker,
            found_inf,
            self.growth_factor,
            self.backoff_factor,
            self.growth_interval,
        );
    }

    /// The current scale (synchronises the device).
    pub fn current_scale(&self) -> f64 {
        self.scale.double_value(&[0])
    }
}
