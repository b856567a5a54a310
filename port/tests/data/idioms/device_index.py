"""Idiom (imagenet, DDP scripts): devices built as torch.device("cuda", i),
torch.device(type="cuda", index=i) and "cuda:1", given to factories, modules, generators and as a
default-device context. `python device_index.py cuda|cpu`; prints RESULT."""

import json
import sys

import torch

cuda = sys.argv[1] == "cuda"
d0 = torch.device("cuda", 0) if cuda else torch.device("cpu")
d1 = torch.device(type="cuda", index=1) if cuda else torch.device("cpu")
name = "cuda:1" if cuda else "cpu"
gen = torch.Generator(device=d0)
gen.manual_seed(3)
x = torch.randn(4, 5, generator=gen, device=d0)
w = torch.nn.Linear(5, 2, device=d1)
torch.nn.init.constant_(w.weight, 0.5)
torch.nn.init.zeros_(w.bias)
w = w.to(name)
with d1:
    ones = torch.ones(4, 2)
y = w(x) + ones + torch.arange(2, device=name) + torch.tensor([1.0, 2.0], device=d0)
y = y + x.new_zeros(4, 2) + torch.zeros_like(y, device=d1) + x.new_tensor([0.5, 0.25], device=d0)
print("RESULT " + json.dumps({
    "y": y.flatten().tolist(),
    "script_devices": [d0.type, d1.type, d1.index],
    "tensor_devices": sorted({t.device.type for t in (x, ones, y, w.weight)}),
    "generators": [isinstance(torch.default_generator, torch.Generator),
                   isinstance(gen, torch.Generator)],
}))
