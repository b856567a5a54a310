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
    fn mzd_fused_moments(
        lamb: c_int,
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
    fn mzd_grad_norm(ts: *const *mut C_tensor, n: i64, out: *mut *mut C_tensor) -> *mut c_char;
    fn mzd_mul_(ts: *const *mut C_tensor, n: i64, factor: *const C_tensor) -> *mut c_char;
    fn mzd_unscale_(
        grads: *const *mut C_tensor,
        n: i64,
        found_inf: *mut C_tensor,
        inv_scale: *const C_tensor,
    ) -> *mut c_char;
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

/// LAMB's hyper-parameters: AdamW's (the trust ratio has none of its own; `weight_decay` 0
/// means no decay and no trust ratio, the engine's group without decay).
pub type Lamb = AdamW;

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
    let lists = [params, grads, exp_avgs, exp_avg_sqs];
    with_moments(false, lists, h, "a fused AdamW update")
}

/// LAMB over `params` with their `grads` and Adam moments, in place: the engine's update
/// (`modelzoo_engine::Algorithm::Lamb`) as multi-tensor `torch._foreach_*` ops.
pub fn fused_lamb(
    params: &[&Tensor],
    grads: &[&Tensor],
    exp_avgs: &[&Tensor],
    exp_avg_sqs: &[&Tensor],
    h: Lamb,
) -> Result<(), DeviceError> {
    let lists = [params, grads, exp_avgs, exp_avg_sqs];
    with_moments(true, lists, h, "a fused LAMB update")
}

/// AdamW or LAMB (`lamb`) over parameters, gradients and both moments (`lists`).
fn with_moments(
    lamb: bool,
    lists: [&[&Tensor]; 4],
    h: AdamW,
    action: &'static str,
) -> Result<(), DeviceError> {
    let n = same_len(&lists.map(<[_]>::len), action)?;
    let [p, g, m, v] = lists.map(ptrs);
    // SAFETY: every pointer is a live at::Tensor for the duration of the call.
    let err = unsafe {
        mzd_fused_moments(
            lamb.into(),
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
    check(err, action)
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

/// Whether the multi-tensor ops below take `tensors`: all on the CPU, or all on one CUDA
/// device. Others (SDAA tensors) go through one op per tensor.
fn multi_tensor(tensors: &[Tensor]) -> bool {
    tensors.first().is_some_and(|first| {
        matches!(first.device(), Device::Cpu | Device::Cuda(_))
            && tensors.iter().all(|t| t.device() == first.device())
    })
}

fn handles(tensors: &[Tensor]) -> Vec<*mut C_tensor> {
    ptrs(&tensors.iter().collect::<Vec<_>>())
}

/// The L2 norm of all `grads` together (float32, 0-dim, on their device; 0 for none): the
/// total norm of `torch.nn.utils.clip_grad_norm_`.
pub fn grad_norm(grads: &[Tensor]) -> Result<Tensor, DeviceError> {
    if grads.is_empty() {
        return Ok(Tensor::zeros([], (Kind::Float, Device::Cpu)));
    }
    if !multi_tensor(grads) {
        let norms: Vec<Tensor> = grads
            .iter()
            .map(|g| g.to_kind(Kind::Float).norm())
            .collect();
        return Ok(Tensor::stack(&norms, 0).norm());
    }
    let g = handles(grads);
    let mut out = std::ptr::null_mut();
    // SAFETY: every pointer is a live at::Tensor for the duration of the call; on success
    // `out` is a new at::Tensor that the returned Tensor owns.
    check(
        unsafe { mzd_grad_norm(g.as_ptr(), g.len() as i64, &mut out) },
        "the gradient norm",
    )?;
    Ok(unsafe { Tensor::from_ptr(out) })
}

/// `tensors[i] *= factor` in place (`factor`: one element, on their device).
pub fn mul_(tensors: &[Tensor], factor: &Tensor) -> Result<(), DeviceError> {
    if !multi_tensor(tensors) {
        // 0-dim, so that it broadcasts into 0-dim tensors too.
        let factor = factor.reshape([]);
        tch::no_grad(|| {
            for t in tensors {
                let _ = t.shallow_clone().g_mul_(&factor.to_kind(t.kind()));
            }
        });
        return Ok(());
    }
    let t = handles(tensors);
    // SAFETY: every pointer is a live at::Tensor for the duration of the call.
    check(
        unsafe { mzd_mul_(t.as_ptr(), t.len() as i64, factor.as_ptr()) },
        "scaling the gradients",
    )
}

/// The fp16 loss scaler's unscale (`GradScaler.unscale_`): `grads[i] *= inv_scale` in place,
/// and `found_inf` (one float element, on their device) set to 1 when a gradient holds an
/// inf or a NaN, left as it is otherwise.
pub fn unscale_(
    grads: &[Tensor],
    inv_scale: &Tensor,
    found_inf: &Tensor,
) -> Result<(), DeviceError> {
    if !multi_tensor(grads) {
        mul_(grads, inv_scale)?;
        if !grads.is_empty() {
            let bad = grad_norm(grads)?
                .isfinite()
                .logical_not()
                .to_kind(Kind::Float);
            let seen = found_inf.maximum(&bad.reshape(found_inf.size()));
            found_inf.shallow_clone().copy_(&seen);
        }
        return Ok(());
    }
    let g = handles(grads);
    // SAFETY: every pointer is a live at::Tensor for the duration of the call.
    check(
        unsafe {
            mzd_unscale_(
                g.as_ptr(),
                g.len() as i64,
                found_inf.as_ptr().cast_mut(),
                inv_scale.as_ptr(),
            )
        },
        "unscaling the gradients",
    )
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
