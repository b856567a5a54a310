"""Idiom (the DDP tutorial's `device = 0`): Tensor.to(int), to(device=int), Module.to(int),
.cuda(int). `python to_int.py cuda|cpu`; prints RESULT."""

import json
import sys

import torch

gpu = 0 if sys.argv[1] == "cuda" else "cpu"
torch.manual_seed(1)
model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
model = model.to(gpu)
model.to(device=gpu)
x = torch.randn(5, 3).to(gpu)
t = torch.randn(5, 1).to(device=gpu)
if gpu == 0:
    x = x.cuda(0)
    model.cuda(0)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
losses = []
for _ in range(3):
    loss = torch.nn.functional.mse_loss(model(x), t)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
print("RESULT " + json.dumps({"losses": losses, "tensor_device": x.device.type}))
