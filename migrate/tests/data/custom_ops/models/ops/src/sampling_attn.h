#pragma once
#include <torch/extension.h>
at::Tensor sampling_attn_forward(const at::Tensor& value, const at::Tensor& shapes, const at::Tensor& loc,
                                 const at::Tensor& attn, int step);
std::vector<at::Tensor> sampling_attn_backward(const at::Tensor& value, const at::Tensor& shapes,
                                               const at::Tensor& loc, const at::Tensor& attn,
                                               const at::Tensor& grad, int step);
