#include <torch/extension.h>
at::Tensor sampling_attn_cpu_forward(const at::Tensor& value) {
  AT_ERROR("not implemented on the CPU");
}
