"""Idiom (AMP training): torch.autocast on the script's device type with a GradScaler, the loss
backpropagated as scaler.scale(loss).backward(). `python amp_scaler.py cuda|cpu`; prints RESULT
with the unscaled losses."""

import json
import sys

import torch

device = torch.device(sys.argv[1])
torch.manual_seed(4)
model = torch.nn.Linear(8, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler(device.type, init_scale=256.0)
x, y = torch.randn(4, 8, device=device), torch.randn(4, 1, device=device)
losses = []
for _ in range(3):
    with torch.autocast(device.type, dtype=torch.float16):
        loss = torch.nn.functional.mse_loss(model(x).float(), y)
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    losses.append(loss.item())
print("RESULT " + json.dumps({"losses": losses}))
