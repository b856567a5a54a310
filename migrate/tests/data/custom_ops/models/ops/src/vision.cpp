#include "sampling_attn.h"

// PYBIND11_MODULE(NotAnExtension, m) in a comment is not a module.
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("sampling_attn_forward", &sampling_attn_forward, "forward");
  m.def("sampling_attn_backward", &sampling_attn_backward, "backward");
}
