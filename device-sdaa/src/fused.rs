//! Batch norm fused with the ReLU after it (and the residual add between them) for training on
//! the CPU in channels-last, an op neither tch nor PyTorch has (csrc/bn_act.cpp): ResNet's
//! `relu(bn(x))` and `relu(bn(x) + identity)` in two passes over memory forward and two
//! backward, where the separate ops make at least three (four with the add) and three.

use std::os::raw::c_char;
use std::sync::atomic::{AtomicU64, Ordering};

use tch::{Device, Kind, Tensor};
use torch_sys::C_tensor;

use crate::shim::check;
use crate::DeviceError;

extern "C" {
    fn mzd_batch_norm_relu(
        x: *const C_tensor,
        residual: *const C_tensor,
        weight: *const C_tensor,
        bias: *const C_tensor,
        running_mean: *const C_tensor,
        running_var: *const C_tensor,
        momentum: f64,
        eps: f64,
        out: *mut *mut C_tensor,
    ) -> *mut c_char;
}

static RUN: AtomicU64 = AtomicU64::new(0);

/// How many fused ops this process has run (forward), so a caller can tell that its model
/// takes the fused path rather than the ops it stands for.
pub fn ops_run() -> u64 {
    RUN.load(Ordering::Relaxed)
}

/// A batch norm layer's tensors: affine weight and bias, running statistics (updated in place).
#[derive(Debug, Clone, Copy)]
pub struct BatchNormParams<'a> {
    pub weight: &'a Tensor,
    pub bias: &'a Tensor,
    pub running_mean: &'a Tensor,
    pub running_var: &'a Tensor,
    pub momentum: f64,
    pub eps: f64,
}

/// Whether [`batch_norm_relu`] takes `x` (and `residual`) with `bn`: x a 4-D fp32 or bf16
/// channels-last CPU tensor with more than one value per channel, the residual of x's size,
/// dtype and layout, the layer's four tensors fp32, contiguous and of x's channel count.
/// Anything else is the caller's to run unfused.
pub fn fusable(x: &Tensor, residual: Option<&Tensor>, bn: &BatchNormParams) -> bool {
    let size = x.size();
    size.len() == 4
        && x.device() == Device::Cpu
        && matches!(x.kind(), Kind::Float | Kind::BFloat16)
        && size[0] * size[2] * size[3] > 1
        && channels_last(x)
        && residual.is_none_or(|r| {
            r.device() == Device::Cpu
                && r.kind() == x.kind()
                && r.size() == size
                && channels_last(r)
        })
        && [bn.weight, bn.bias, bn.running_mean, bn.running_var]
            .iter()
            .all(|t| {
                t.device() == Device::Cpu
                    && t.kind() == Kind::Float
                    && t.size() == [size[1]]
                    && t.is_contiguous()
            })
}

/// `relu(batch_norm(x) [+ residual])` in training mode, with autograd (gradients for x, the
/// residual, weight and bias), the running statistics updated as `torch.nn.BatchNorm2d` does.
/// The caller checks [`fusable`] first.
pub fn batch_norm_relu(
    x: &Tensor,
    residual: Option<&Tensor>,
    bn: &BatchNormParams,
) -> Result<Tensor, DeviceError> {
    let mut out: *mut C_tensor = std::ptr::null_mut();
    check(
        unsafe {
            mzd_batch_norm_relu(
                x.as_ptr(),
                residual.map_or(std::ptr::null(), |r| r.as_ptr()),
                bn.weight.as_ptr(),
                bn.bias.as_ptr(),
                bn.running_mean.as_ptr(),
                bn.running_var.as_ptr(),
                bn.momentum,
                bn.eps,
                &mut out,
            )
        },
        "running the fused batch norm and ReLU",
    )?;
    RUN.fetch_add(1, Ordering::Relaxed);
    Ok(unsafe { Tensor::from_ptr(out) })
}

/// Whether 4-D `t` is dense in channels-last order (NHWC memory); strides of size-1 dimensions
/// do not matter, as in libtorch's `is_contiguous(ChannelsLast)`.
fn channels_last(t: &Tensor) -> bool {
    let (size, stride) = (t.size(), t.stride());
    let [_, c, h, w] = size[..] else {
        return false;
    };
    let expected = [c * h * w, 1, w * c, c];
    size.iter()
        .zip(stride.iter().zip(expected))
        .all(|(&n, (&s, e))| n == 1 || s == e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_last_layouts_are_recognised() {
        let nchw = Tensor::zeros([2, 3, 4, 5], (Kind::Float, Device::Cpu));
        let nhwc = nchw
            .permute([0, 2, 3, 1])
            .contiguous()
            .permute([0, 3, 1, 2]);
        assert!(!channels_last(&nchw));
        assert!(channels_last(&nhwc));
        // A 1×1 spatial map is both layouts.
        let pooled = Tensor::zeros([2, 3, 1, 1], (Kind::Float, Device::Cpu));
        assert!(channels_last(&pooled));
        assert!(!channels_last(&nhwc.narrow(3, 0, 2)));
    }
}
