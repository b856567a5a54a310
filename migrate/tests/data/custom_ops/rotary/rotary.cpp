#include <torch/library.h>

at::Tensor rotate_cuda(const at::Tensor& x, double theta);

TORCH_LIBRARY(rotary, m) {
  m.def("rotate(Tensor x, float theta) -> Tensor");
  m.def("rotate_backward", &rotate_cuda);
}

TORCH_LIBRARY_IMPL(rotary, CUDA, m) {
  m.impl("rotate", &rotate_cuda);
}
