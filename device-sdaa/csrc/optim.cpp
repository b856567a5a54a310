// libtorch's fused optimizer kernels and gradient release, which tch does not expose.
//
//   mzd_fused_adamw / mzd_fused_sgd: at::_fused_adamw_ / at::_fused_sgd_, the kernels behind
//     torch.optim.AdamW(fused=True) / SGD(fused=True): one pass over each parameter, its
//     gradient and its state, where the default single-tensor update makes five to seven.
//     Each parameter's tensors must share one layout, dense and non-overlapping (channels-last
//     weights included: the kernels see flat 1-D views of the same memory), and one dtype and
//     device (the Rust side sends the rest through its single-tensor path).
//   mzd_grads_set_none: gradients to None (torch's zero_grad default), so the next backward
//     writes fresh gradients instead of adding into zero-filled ones.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "protect.h"

#include <cstdint>
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
}  // namespace

extern "C" {

// `step` is this update's 1-based count (AdamW's bias correction), the same for every tensor.
char* mzd_fused_adamw(at::Tensor** params, at::Tensor** grads, at::Tensor** exp_avgs,
                      at::Tensor** exp_avg_sqs, int64_t n, double lr, double beta1, double beta2,
                      double weight_decay, double eps, int64_t step) {
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

char* mzd_grads_set_none(at::Tensor** params, int64_t n) {
  MZD_PROTECT({
    for (int64_t i = 0; i < n; ++i) params[i]->mutable_grad().reset();
  })
}

}  // extern "C"
