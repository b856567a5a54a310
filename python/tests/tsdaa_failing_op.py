"""A tiny emulated run for test_torch_sdaa_models.py's failed-op inventory test, under
SDAA_EMULATOR_OP_INVENTORY: a linear layer on sdaa, then a CUDA-only op (the fused LSTM cell,
which has no CPU kernel for the emulator to run) that kills the run. torch_sdaa still writes the
inventory at exit, listing the op as failed."""

import torch

import torch_sdaa  # noqa: F401

x = torch.nn.Linear(4, 8).to("sdaa")(torch.randn(2, 4).to("sdaa"))
gates = torch.randn(2, 8, device="sdaa")
torch.ops.aten._thnn_fused_lstm_cell(x, gates, torch.zeros(2, 2, device="sdaa"))
