"""A tiny emulated run for test_torch_sdaa.py's op inventory test, under
SDAA_EMULATOR_OP_INVENTORY: two fp16 autocast + GradScaler steps of a small model on sdaa, an
fp64 op on sdaa, an op on the CPU side and an op the emulator serves through its copying CPU
fallback. torch_sdaa writes the inventory files at exit."""

import torch

import torch_sdaa  # noqa: F401

net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)).to("sdaa")
opt = torch.optim.SGD(net.parameters(), lr=0.01)
scaler = torch.sdaa.amp.GradScaler()
x = torch.randn(16, 4).to("sdaa")
for _ in range(2):
    opt.zero_grad()
    with torch.autocast("sdaa"):
        loss = net(x).float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()

(x.double() * 2).sum()                 # fp64 on sdaa
torch.ones(3, dtype=torch.float64).cumsum(0)  # fp64 on the CPU side
torch.tril_indices(3, 3, device="sdaa")  # served by the emulator's copying CPU fallback
