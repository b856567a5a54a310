//! Dynamic loss scaling for fp16 training (PyTorch's `GradScaler`), on libtorch's own
//! `_amp_update_scale_` and (through device_sdaa, which tch lacks)
//! `_amp_foreach_non_finite_check_and_unscale_` ops.

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

    /// Divide every gradient by the scale in place; returns `found_inf` for [`Self::update`]
    /// (one element on the scale's device, 1.0 when a gradient holds an inf or a NaN).
    pub fn unscale(&self, grads: &[Tensor]) -> Result<Tensor, device_sdaa::DeviceError> {
        let inv = self
            .scale
            .to_kind(Kind::Double)
            .reciprocal()
            .to_kind(Kind::Float);
        let found_inf = inv.zeros_like();
        device_sdaa::optim::unscale_(grads, &inv, &found_inf)?;
        Ok(found_inf)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A finite step divides the gradients by the scale and keeps it; an inf or a NaN in any
    /// gradient flags the step (the engine skips it) and halves the scale, as GradScaler does.
    #[test]
    fn unscale_flags_overflow_and_update_backs_off() {
        let mut sc = GradScaler::new(1024.0, |t| t.shallow_clone());
        let grads = [
            Tensor::from_slice(&[2048.0f32, -512.0]),
            Tensor::from_slice(&[4096.0f32]).to_kind(Kind::Half),
        ];
        let found_inf = sc.unscale(&grads).unwrap();
        assert_eq!(found_inf.double_value(&[0]), 0.0);
        assert_eq!(Vec::<f32>::try_from(&grads[0]).unwrap(), [2.0, -0.5]);
        assert_eq!(grads[1].double_value(&[0]), 4.0);
        sc.update(&found_inf);
        assert_eq!(
            sc.current_scale(),
            1024.0,
            "grows only after 2000 finite steps"
        );

        for bad in [f64::INFINITY, f64::NAN] {
            let _ = grads[1].shallow_clone().fill_(bad);
            let found_inf = sc.unscale(&grads).unwrap();
            assert_eq!(found_inf.double_value(&[0]), 1.0, "{bad}");
            let before = sc.current_scale();
            sc.update(&found_inf);
            assert_eq!(sc.current_scale(), before / 2.0, "backoff after {bad}");
        }
    }
}
