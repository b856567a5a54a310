"""A custom CUDA op the way detection projects ship one: an autograd Function over a compiled
extension (ScaledTanhCUDA, built by setup.py with nvcc — not here), and the pure-PyTorch twin
the authors kept for testing. modelzoo port's tests route the Function (--op)."""
import torch
from torch.autograd import Function

import ScaledTanhCUDA as _C


class ScaledTanhFunction(Function):
    @staticmethod
    def forward(ctx, x, weight, block_size):
        ctx.block_size = block_size
        ctx.save_for_backward(x, weight)
        return _C.scaled_tanh_forward(x, weight, block_size)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        gx, gw = _C.scaled_tanh_backward(x, weight, grad, ctx.block_size)
        return gx, gw, None


def scaled_tanh_pytorch(x, weight):
    """The same op in PyTorch: weight * tanh(x), summed with x."""
    return x + weight * torch.tanh(x)
