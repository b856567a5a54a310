// libtorch's fused optimizer kernels and gradient release, which tch does not expose.
//
//   mzd_fused_moments (AdamW) / mzd_fused_sgd: at::_fused_adamw_ / at::_fused_sgd_, the
//     kernels behind torch.optim.AdamW(fused=True) / SGD(fused=True): one pass over each
//     parameter, its gradient and its state, where the default single-tensor update makes
//     five to seven.
//     Each parameter's tensors must share one layout, dense and non-overlapping (channels-last
//     weights included: the kernels see flat 1-D views of the same memory), and one dtype and
//     device (the Rust side sends the rest through its single-tensor path).
//   mzd_fused_moments (LAMB): apex FusedLAMB's update (see the engine's Algorithm::Lamb) in
//     torch._foreach_* ops, as a multi-tensor PyTorch optimizer writes it: on CUDA each call
//     is a few multi-tensor kernels for the whole list, where the single-tensor update
//     launches about twenty kernels per parameter (BERT-base: ~4,000 launches a step).
//   mzd_grad_norm / mzd_mul_ / mzd_unscale_: the global gradient norm, a scale applied to
//     every gradient, and the fp16 loss scaler's unscale with its inf/NaN check
//     (at::_amp_foreach_non_finite_check_and_unscale_) as multi-tensor ops, what
//     torch.nn.utils.clip_grad_norm_ and torch.amp.GradScaler run, instead of one or two
//     kernels per gradient.
//   mzd_grads_set_none: gradients to None (torch's zero_grad default), so the next backward
//     writes fresh gradients instead of adding into zero-filled ones.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "protect.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace {
// Flat 1-D views: an element-wise update of tensors sharing one dense layout is the same
// update of their memory in order.
std::vector<at::Tensor> list(at::Tensor** ts, int64_t n) {
  std::vector<at::Tensor> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const at::Tensor& t = *ts[i];
    out.push_back(t.as_strided({t.numel()}, {1}, t.storage_offset()));
  }
  return out;
}
std::vector<at::Tensor> handles(at::Tensor** ts, int64_t n) {
  std::vector<at::Tensor> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.push_back(*ts[i]);
  return out;
}
}  // namespace

extern "C" {

// `step` is this update's 1-based count (bias correction), the same for every tensor.
static char* fused_adamw(at::Tensor** params, at::Tensor** grads, at::Tensor** exp_avgs,
                         at::Tensor** exp_avg_sqs, int64_t n, double lr, double beta1,
                         double beta2, double weight_decay, double eps, int64_t step) {
  MZD_PROTECT({
    if (n == 0) return nullptr;
    c10::NoGradGuard no_grad;
    auto p = list(params, n);
    at::Tensor count = at::full({}, static_cast<double>(step),
                                p[0].options().dtype(at::kFloat).requires_grad(false));
    std::vector<at::Tensor> steps(static_cast<size_t>(n), count);
    at::_fused_adamw_(p, list(grads, n), list(exp_avgs, n), list(exp_avg_sqs, n), {}, steps, lr,
                      beta1, beta2, weight_decay, eps, /*amsgrad=*/false, /*maximize=*/false);
  })
}

char* mzd_fused_sgd(at::Tensor** params, at::Tensor** grads, at::Tensor** momentum_buffers,
                    int64_t n, double lr, double momentum, double weight_decay, int nesterov) {
  MZD_PROTECT({
    if (n == 0) return nullptr;
    c10::NoGradGuard no_grad;
    std::vector<at::Tensor> bufs;
    if (momentum != 0.0) bufs = list(momentum_buffers, n);
    at::_fused_sgd_(list(params, n), list(grads, n), bufs, weight_decay, momentum, lr,
                    /*dampening=*/0.0, nesterov != 0, /*maximize=*/false,
                    /*is_first_step=*/false);
  })
}

// Same arguments as fused_adamw. The parameters are taken in chunks of at most kLambChunk
// elements, so that the update's temporary (one tensor per parameter) stays small.
static char* fused_lamb(at::Tensor** params, at::Tensor** grads, at::Tensor** exp_avgs,
                        at::Tensor** exp_avg_sqs, int64_t n, double lr, double beta1,
                        double beta2, double weight_decay, double eps, int64_t step) {
  constexpr int64_t kLambChunk = int64_t{1} << 26;
  MZD_PROTECT({
    c10::NoGradGuard no_grad;
    const auto p = list(params, n), g = list(grads, n), m = list(exp_avgs, n),
               v = list(exp_avg_sqs, n);
    const double bc1 = 1.0 - std::pow(beta1, static_cast<double>(step));
    const double bc2 = 1.0 - std::pow(beta2, static_cast<double>(step));
    for (size_t lo = 0, hi = 0; lo < p.size(); lo = hi) {
      int64_t elems = 0;
      while (hi < p.size() && (hi == lo || elems + p[hi].numel() <= kLambChunk))
        elems += p[hi++].numel();
      const auto part = [lo, hi](const std::vector<at::Tensor>& l) {
        return std::vector<at::Tensor>(l.begin() + lo, l.begin() + hi);
      };
      const auto ps = part(p), gs = part(g), ms = part(m), vs = part(v);
      at::_foreach_lerp_(ms, gs, 1.0 - beta1);
      at::_foreach_mul_(vs, beta2);
      at::_foreach_addcmul_(vs, gs, gs, 1.0 - beta2);
      // r = m̂ / (√v̂ + ε), in one temporary list.
      auto r = at::_foreach_div(vs, bc2);
      at::_foreach_sqrt_(r);
      at::_foreach_add_(r, eps);
      at::_foreach_reciprocal_(r);
      at::_foreach_mul_(r, ms);
      at::_foreach_div_(r, bc1);
      if (weight_decay != 0.0) {
        // r += λ·p, then the trust ratio ‖p‖/‖r‖ (1 where either is 0), kept on the device.
        at::_foreach_add_(r, ps, weight_decay);
        const auto wn = at::stack(at::_foreach_norm(ps));
        const auto rn = at::stack(at::_foreach_norm(r));
        const auto ratio =
            at::where(wn.gt(0).logical_and(rn.gt(0)), wn / rn, at::ones_like(wn));
        at::_foreach_mul_(r, ratio.unbind(0));
      }
      at::_foreach_add_(ps, r, -lr);
    }
  })
}

// AdamW (lamb == 0) or LAMB over the same arguments: parameters, gradients, both moments.
char* mzd_fused_moments(int lamb, at::Tensor** params, at::Tensor** grads,
                        at::Tensor** exp_avgs, at::Tensor** exp_avg_sqs, int64_t n, double lr,
                        double beta1, double beta2, double weight_decay, double eps,
                        int64_t step) {
  return (lamb != 0 ? fused_lamb : fused_adamw)(params, grads, exp_avgs, exp_avg_sqs, n, lr,
                                               beta1, beta2, weight_decay, eps, step);
}

// The L2 norm of all of `ts` together, as a new float32 0-dim tensor on their device. One
// _foreach_norm per dtype: half and bfloat16 tensors are reduced in float32, float64 ones in
// float64 (asking float32 of them is an error, not a cast).
char* mzd_grad_norm(at::Tensor** ts, int64_t n, at::Tensor** out) {
  MZD_PROTECT({
    c10::NoGradGuard no_grad;
    std::map<at::ScalarType, std::vector<at::Tensor>> by_dtype;
    for (at::Tensor& t : handles(ts, n)) by_dtype[t.scalar_type()].push_back(t);
    std::vector<at::Tensor> parts;
    for (const auto& [dtype, group] : by_dtype) {
      const auto norms = at::_foreach_norm(
          group, 2, dtype == at::kDouble ? std::nullopt : std::optional(at::kFloat));
      parts.push_back(at::stack(norms).to(at::kFloat));
    }
    *out = new at::Tensor(at::linalg_vector_norm(at::cat(parts), 2));
  })
}

// ts[i] *= factor (a 1-element tensor on their device), in place.
char* mzd_mul_(at::Tensor** ts, int64_t n, const at::Tensor* factor) {
  MZD_PROTECT({
    c10::NoGradGuard no_grad;
    at::_foreach_mul_(handles(ts, n), factor->reshape({}));
  })
}

// grads[i] *= inv_scale in place; found_inf (1 element, float) becomes 1 where any element is
// inf or NaN.
char* mzd_unscale_(at::Tensor** grads, int64_t n, at::Tensor* found_inf,
                   const at::Tensor* inv_scale) {
  MZD_PROTECT({
    c10::NoGradGuard no_grad;
    at::_amp_foreach_non_finite_check_and_unscale_(handles(grads, n), *found_inf, *inv_scale);
  })
}

char* mzd_grads_set_none(at::Tensor** params, int64_t n) {
  MZD_PROTECT({
    for (int64_t i = 0; i < n; ++i) params[i]->mutable_grad().reset();
  })
}

}  // extern "C"
