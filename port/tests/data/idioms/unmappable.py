"""A CUDA call with no CPU meaning (a CUDA graph capture): the CPU baseline must stop with the
shim's own error naming it."""

import torch

graph = torch.cuda.CUDAGraph()
print("captured", graph)
