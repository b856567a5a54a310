"""A CUDA training script in the style of public PyTorch projects: `.cuda()` everywhere,
torch.cuda.amp (autocast + GradScaler), cudnn.benchmark, a pinned DataLoader, per-step
`step N loss X` lines. `modelzoo port`'s tests port it to SDAA and run both sides.

    python train.py [--steps N] [--amp] [--fp64-stats] [--memory-stats]
"""
import argparse

import torch
import torch.backends.cudnn as cudnn
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1, stride=2), nn.BatchNorm2d(16), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        return self.head(self.features(x))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--amp", action="store_true")
    p.add_argument("--fp64-stats", action="store_true", help="keep a running loss in float64")
    p.add_argument("--memory-stats", action="store_true", help="print torch.cuda.memory_stats()")
    a = p.parse_args()

    torch.manual_seed(0)
    torch.cuda.manual_seed_all(0)
    cudnn.benchmark = True
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(192, 3, 16, 16, generator=g), torch.randint(0, 10, (192,), generator=g))
    loader = DataLoader(data, batch_size=32, shuffle=True, pin_memory=True, generator=g)

    model = Net().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = torch.cuda.amp.GradScaler(enabled=a.amp)
    running = torch.zeros((), dtype=torch.float64).cuda()
    step = 0
    while step < a.steps:
        for x, y in loader:
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            with torch.cuda.amp.autocast(enabled=a.amp):
                loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            if a.fp64_stats:
                running += loss.detach().double()
            if a.memory_stats:
                print(torch.cuda.memory_stats())
            torch.cuda.synchronize()
            print(f"step {step} loss {loss.item():.6f}", flush=True)
            step += 1
            if step == a.steps:
                break


if __name__ == "__main__":
    main()
