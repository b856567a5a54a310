"""Trains a tiny net whose middle layer is a custom CUDA op (ops/scaled_tanh.py), the CUDA way.

    python train.py [--steps N]
"""
import argparse

import torch
import torch.nn as nn

from ops.scaled_tanh import ScaledTanhFunction


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 8)
        self.weight = nn.Parameter(torch.full((8,), 0.5))
        self.fc2 = nn.Linear(8, 1)

    def forward(self, x):
        return self.fc2(ScaledTanhFunction.apply(self.fc1(x), self.weight, 64))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=5)
    a = p.parse_args()
    torch.manual_seed(0)
    model = Net().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(32, 8, generator=g).cuda(), torch.randn(32, 1, generator=g).cuda()
    for step in range(a.steps):
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.6f}", flush=True)


if __name__ == "__main__":
    main()
