// {{name}}: the device kernels, one per op and device, registered in {{name}}.cpp.
#pragma once

#include <ATen/ATen.h>

namespace {{name}} {

// cpu.cpp
at::Tensor scale_add_cpu(const at::Tensor& x, const at::Tensor& y, double alpha);

// sdaa.cpp
at::Tensor scale_add_sdaa(const at::Tensor& x, const at::Tensor& y, double alpha);

}  // namespace {{name}}
