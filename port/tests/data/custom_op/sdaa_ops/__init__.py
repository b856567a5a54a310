"""The port's device implementation of ScaledTanh, the way a porter writes one: ATen ops that
run on whatever device the tensors are on, with autograd. BROKEN=1 in the environment makes it
compute weight * tanh(x) * 1.01 instead: a subtly wrong implementation for the tests."""
import os

import torch


def scaled_tanh(x, weight, block_size=64):
    scale = 1.01 if os.environ.get("SCALED_TANH_BROKEN") == "1" else 1.0
    return x + weight * torch.tanh(x) * scale
