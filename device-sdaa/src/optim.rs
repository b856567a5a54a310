//! libtorch's fused optimizer kernels and gradient release for tch, which has neither
//! (csrc/optim.cpp). The engine's optimizers update through these on the CPU and CUDA: one
//! pass per parameter where the single-tensor update makes five to seven, and gradients
//! dropped after the step (torch's `zero_grad()` default) instead of zero-filled.

use std::os::raw::{c_char, c_int};

use tch::{Device, Kind, Tensor};
use torch_sys::C_tensor;

use crate::shim::check;
use crate::DeviceError;

extern "C" {
    fn mzd_fused_adamw(
        params: *const *mut C_tensor,
        grads: *const *mut C_tensor,
        exp_avgs: *const *mut C_tensor,
        exp_avg_sqs: *const *mut C_tensor,
        n: i64,
        lr: f64,
        beta1: f64,
        beta2: f64,
        weight_decay: f64,
        eps: f64,
        step: i64,
    ) -> *mut c_char;
    fn mzd_fused_sgd(
        params: *const *mut C_tensor,
        grads: *const *mut C_tensor,
        momentum_buffers: *const *mut C_tensor,
        n: i64,
        lr: f64,
        momentum: f64,
        weight_decay: f64,
        nesterov: c_int,
    ) -> *mut c_char;
    fn mzd_grads_set_none(params: *const *mut C_tensor, n: i64) -> *mut c_char;
}

/// One AdamW hyper-parameter set (`torch.optim.AdamW`, amsgrad off).
#[derive(Debug, Clone, Copy)]
pub struct AdamW {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
    /// This update's 1-based count (bias correction).
    pub step: u64,
}

/// One SGD hyper-parameter set (`torch.optim.SGD`, dampening 0).
#[derive(Debug, Clone, Copy)]
pub struct Sgd {
    pub lr: f64,
    pub momentum: f64,
    pub weight_decay: f64,
    pub nesterov: bool,
}

/// Whether the fused kernels take these tensors (a parameter, its gradient and its state): on
/// the CPU or a CUDA device, of one floating dtype, all with the parameter's shape and strides,
/// dense and non-overlapping (contiguous or channels-last). Anything else goes through the
/// caller's single-tensor update.
pub fn fusable(tensors: &[&Tensor]) -> bool {
    let Some(first) = tensors.first() else {
        return false;
    };
    let (device, kind) = (first.device(), first.kind());
    let (size, stride) = (first.size(), first.stride());
    matches!(device, Device::Cpu | Device::Cuda(_))
        && matches!(
            kind,
            Kind::Float | Kind::Double | Kind::Half | Kind::BFloat16
        )
        && dense(&size, &stride)
        && tensors.iter().all(|t| {
            t.device() == device && t.kind() == kind && t.size() == size && t.stride() == stride
        })
}

/// Whether `stride` lays `size` out densely without overlap (some permutation of a
/// contiguous layout).
fn dense(size: &[i64], stride: &[i64]) -> bool {
    let mut dims: Vec<(i64, i64)> = size
        .iter()
        .zip(stride)
        .filter(|(&n, _)| n != 1)
        .map(|(&n, &s)| (s, n))
        .collect();
    dims.sort_unstable();
    let mut expected = 1;
    for (s, n) in dims {
        if s != expected {
            return false;
        }
        expected *= n;
    }
    true
}

fn ptrs(ts: &[&Tensor]) -> Vec<*mut C_tensor> {
    // The kernels change the tensors' data, never the handles tch owns.
    ts.iter().map(|t| t.as_ptr().cast_mut()).collect()
}

fn same_len(lists: &[usize], action: &str) -> Result<usize, DeviceError> {
    let n = lists[0];
    if lists.iter().any(|&l| l != n) {
        return Err(DeviceError::Torch {
            action: "a fused optimizer update",
            message: format!("{action}: lists of unequal length {lists:?}"),
        });
    }
    Ok(n)
}

/// `torch._fused_adamw_` over `params` with their `grads` and state, in place.
pub fn fused_adamw(
    params: &[&Tensor],
    grads: &[&Tensor],
    exp_avgs: &[&Tensor],
    exp_avg_sqs: &[&Tensor],
    h: AdamW,
) -> Result<(), DeviceError> {
    let lens = [params.len(), grads.len(), exp_avgs.len(), exp_avg_sqs.len()];
    let n = same_len(&lens, "AdamW")?;
    let (p, g, m, v) = (ptrs(params), ptrs(grads), ptrs(exp_avgs), ptrs(exp_avg_sqs));
    // SAFETY: every pointer is a live at::Tensor for the duration of the call.
    let err = unsafe {
        mzd_fused_adamw(
            p.as_ptr(),
            g.as_ptr(),
            m.as_ptr(),
            v.as_ptr(),
            n as i64,
            h.lr,
            h.beta1,
            h.beta2,
            h.weight_decay,
            h.eps,
            h.step as i64,
        )
    };
    check(err, "a fused AdamW update")
}

/// `torch._fused_sgd_` over `params` with their `grads` and momentum buffers (ignored, and
/// may be empty, when momentum is 0), in place.
pub fn fused_sgd(
    params: &[&Tensor],
    grads: &[&Tensor],
    momentum_buffers: &[&Tensor],
    h: Sgd,
) -> Result<(), DeviceError> {
    let bufs = if h.momentum != 0.0 {
        momentum_buffers.len()
    } else {
        params.len()
    };
    let n = same_len(&[params.len(), grads.len(), bufs], "SGD")?;
    let (p, g, b) = (ptrs(params), ptrs(grads), ptrs(momentum_buffers));
    // SAFETY: every pointer is a live at::Tensor for the duration of the call; the buffer
    // list is read only when momentum is on, and then holds `n` entries.
    let err = unsafe {
        mzd_fused_sgd(
            p.as_ptr(),
            g.as_ptr(),
            b.as_ptr(),
            n as i64,
            h.lr,
            h.momentum,
            h.weight_decay,
            h.nesterov.into(),
        )
    };
    check(err, "a fused SGD update")
}

/// Drop the gradients of `params` (`zero_grad(set_to_none=True)`).
pub fn set_grads_to_none(params: &[&Tensor]) -> Result<(), DeviceError> {
    let p = ptrs(params);
    // SAFETY: every pointer is a live at::Tensor for the duration of the call.
    check(
        unsafe { mzd_grads_set_none(p.as_ptr(), p.len() as i64) },
        "dropping gradients",
    )
}

#[cfg(test)]
mod tests {
    use super::dense;

    #[test]
    fn dense_layouts_are_permutations_of_contiguous_ones() {
        assert!(dense(&[2, 3, 4, 5], &[60, 20, 5, 1]), "contiguous");
        assert!(dense(&[2, 3, 4, 5], &[60, 1, 15, 3]), "channels-last");
        assert!(dense(&[8, 1], &[1, 1]), "size-1 dims do not count");
        assert!(dense(&[], &[]), "a scalar");
        assert!(
            !dense(&[4, 4], &[8, 1]),
            "a slice of a wider tensor has gaps"
        );
        assert!(!dense(&[4, 4], &[0, 1]), "a broadcast view overlaps");
    }
}
