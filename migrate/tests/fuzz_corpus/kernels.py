import cupy as cp
import triton
import triton.language as tl
from torch.utils.cpp_extension import load

fused = load(name="fused", sources=["csrc/fused.cpp", "csrc/fused_kernel.cu"])


@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pass


def to_gpu(x):
    return cp.asarray(x)
