// {{name}}: the op library's schema, its autograd, and where each device's kernel is
// registered. The dispatcher routes a call by the inputs' device: CPU tensors to the CPU
// kernel (cpu.cpp), sdaa tensors — the PrivateUse1 key, which torch_sdaa (and the kit's SDAA
// emulator) registers — to the sdaa kernel (sdaa.cpp). Autograd wraps both: its backward is
// written with ATen ops, which run on whatever device the gradient is on.
//
// Add an op: declare it in TORCH_LIBRARY, write its kernels in cpu.cpp and sdaa.cpp (declared in
// kernels.h), register them below, and give it an autograd Function when it has a gradient.

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "kernels.h"

namespace {{name}} {
namespace {

// scale_add(x, y, alpha) = x + alpha * y; d/dx = 1, d/dy = alpha.
class ScaleAdd : public torch::autograd::Function<ScaleAdd> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            const at::Tensor& y, double alpha) {
    ctx->saved_data["alpha"] = alpha;
    // Below autograd: call the device kernel the dispatcher picks for the inputs.
    at::AutoDispatchBelowADInplaceOrView guard;
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("{{name}}::scale_add", "")
                         .typed<at::Tensor(const at::Tensor&, const at::Tensor&, double)>();
    return op.call(x, y, alpha);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const double alpha = ctx->saved_data["alpha"].toDouble();
    const at::Tensor& grad = grads[0];
    return {grad, grad * alpha, at::Tensor()};
  }
};

at::Tensor scale_add_autograd(const at::Tensor& x, const at::Tensor& y, double alpha) {
  return ScaleAdd::apply(x, y, alpha);
}

}  // namespace
}  // namespace {{name}}

TORCH_LIBRARY({{name}}, m) {
  m.def("scale_add(Tensor x, Tensor y, float alpha) -> Tensor");
}

TORCH_LIBRARY_IMPL({{name}}, CPU, m) {
  m.impl("scale_add", &{{name}}::scale_add_cpu);
}

TORCH_LIBRARY_IMPL({{name}}, PrivateUse1, m) {
  m.impl("scale_add", &{{name}}::scale_add_sdaa);
}

TORCH_LIBRARY_IMPL({{name}}, Autograd, m) {
  m.impl("scale_add", &{{name}}::scale_add_autograd);
}
