// {{name}}: the CPU kernels — the working example. A CPU kernel is what the op's reference
// and the CPU baseline of a port run; write it plainly, correctness first.

#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>

#include "kernels.h"

namespace {{name}} {

at::Tensor scale_add_cpu(const at::Tensor& x, const at::Tensor& y, double alpha) {
  TORCH_CHECK(x.sizes() == y.sizes(), "{{name}}::scale_add: x and y must have one shape, got ",
              x.sizes(), " and ", y.sizes());
  TORCH_CHECK(x.scalar_type() == y.scalar_type(),
              "{{name}}::scale_add: x and y must have one dtype, got ", x.scalar_type(), " and ",
              y.scalar_type());
  TORCH_CHECK(x.device().is_cpu() && y.device().is_cpu(),
              "{{name}}::scale_add (CPU kernel): both inputs must be on the CPU");
  at::Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
  const at::Tensor xc = x.contiguous();
  const at::Tensor yc = y.contiguous();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "scale_add_cpu", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const scalar_t* xp = xc.data_ptr<scalar_t>();
    const scalar_t* yp = yc.data_ptr<scalar_t>();
    scalar_t* op = out.data_ptr<scalar_t>();
    const acc_t a = static_cast<acc_t>(alpha);
    const int64_t n = out.numel();
    at::parallel_for(0, n, 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        op[i] = static_cast<scalar_t>(static_cast<acc_t>(xp[i]) + a * static_cast<acc_t>(yp[i]));
      }
    });
  });
  return out;
}

}  // namespace {{name}}
