import torch.nn as nn

from ..functions import SamplingAttnFunction


class SamplingAttn(nn.Module):
    def __init__(self, im2col_step=64):
        super().__init__()
        self.im2col_step = im2col_step

    def forward(self, value, shapes, loc, attn):
        return SamplingAttnFunction.apply(value, shapes, loc, attn, self.im2col_step)
