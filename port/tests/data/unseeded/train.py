"""A CUDA training script that seeds nothing (like many tutorials): two runs of it start from
different weights, so their losses differ from the first step. `modelzoo port` must say the
original is not reproducible, never that the port drifted.

    python train.py [--steps N]
"""
import argparse

import torch
import torch.nn as nn


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=3)
    a = p.parse_args()
    model = nn.Linear(8, 4).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(16, 8, generator=g).cuda()
    y = torch.randint(0, 4, (16,), generator=g).cuda()
    for step in range(a.steps):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.6f}", flush=True)


if __name__ == "__main__":
    main()
