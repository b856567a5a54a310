#include <torch/extension.h>
at::Tensor fused_bias_act(const at::Tensor& x, const at::Tensor& b);
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("fused_bias_act", &fused_bias_act); }
