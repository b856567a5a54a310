"""PyTorch eager reference for the run_resnet benchmark: torchvision ResNet, SGD(momentum 0.9,
weight decay 1e-4 on conv/linear weights only), cross-entropy, torch.optim defaults otherwise
(zero_grad sets gradients to None), timed after warm-up. Two ways, as issue #17 asks:

  --data fixed    compute only: one random batch made once, already in memory (run_resnet
                  --fixed_batch does the same)
  --data loader   end to end: an idiomatic Dataset + DataLoader(num_workers=N, shuffle) over
                  synthetic images built as run_resnet's synthetic set builds them (a smooth
                  4x4-grid class prototype upsampled to the image size, plus unit Gaussian
                  noise per pixel, deterministic per index), loss read every step

Each step is timed from the end of the previous one (data wait included), as run_resnet's
train.ips window with --logging_freq 1. Prints one JSON line: {"ips": images/s, "step_s": [...]}.
"""

import argparse
import json
import time

import torch
import torchvision


class SyntheticImages(torch.utils.data.Dataset):
    """What modelzoo_vision::Synthetic yields, generated with torch ops in the worker."""

    def __init__(self, samples, num_classes, size, seed):
        g = torch.Generator().manual_seed(seed)
        self.grids = torch.randn(num_classes, 3, 4, 4, generator=g)
        self.cell = torch.arange(size) * 4 // size  # pixel -> grid cell, as the Rust set
        self.samples, self.size, self.seed = samples, size, seed

    def __len__(self):
        return self.samples

    def __getitem__(self, i):
        label = i % len(self.grids)
        proto = self.grids[label][:, self.cell][:, :, self.cell]
        g = torch.Generator().manual_seed(self.seed * 31 + i)
        return proto + torch.randn(3, self.size, self.size, generator=g), label


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="resnet50")
    p.add_argument("--batch_size", type=int, default=16)
    p.add_argument("--image_size", type=int, default=224)
    p.add_argument("--num_classes", type=int, default=1000)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--amp", action="store_true")
    p.add_argument("--channels_last", action="store_true")
    p.add_argument("--data", choices=["fixed", "loader"], default="fixed")
    p.add_argument("--num_workers", type=int, default=1)
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    dev = torch.device(a.device)
    model = getattr(torchvision.models, a.model)(num_classes=a.num_classes).to(dev)
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    decay = [q for q in model.parameters() if q.dim() > 1]
    no_decay = [q for q in model.parameters() if q.dim() <= 1]
    opt = torch.optim.SGD(
        [{"params": decay, "weight_decay": 1e-4}, {"params": no_decay, "weight_decay": 0.0}],
        lr=0.1,
        momentum=0.9,
    )
    amp_dtype = torch.bfloat16 if dev.type == "cpu" else torch.float16
    scaler = torch.amp.GradScaler(dev.type, enabled=a.amp and amp_dtype == torch.float16)
    crit = torch.nn.CrossEntropyLoss()
    steps = a.warmup + a.steps
    if a.data == "fixed":
        x = torch.randn(a.batch_size, 3, a.image_size, a.image_size, device=dev)
        x = x.to(memory_format=fmt)  # once, as run_resnet --fixed_batch keeps its batch
        y = torch.randint(0, a.num_classes, (a.batch_size,), device=dev)
        batches = ((x, y) for _ in range(steps))
    else:
        data = SyntheticImages(a.batch_size * steps, a.num_classes, a.image_size, seed=42)
        batches = torch.utils.data.DataLoader(
            data,
            batch_size=a.batch_size,
            shuffle=True,
            drop_last=True,
            num_workers=a.num_workers,
            pin_memory=dev.type == "cuda",
        )
    model.train()

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    times = []
    sync()
    t0 = time.perf_counter()
    for i, (x, y) in enumerate(batches):
        x = x.to(dev, non_blocking=True).to(memory_format=fmt)
        y = y.to(dev, non_blocking=True)
        with torch.autocast(dev.type, dtype=amp_dtype, enabled=a.amp):
            loss = crit(model(x), y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        loss.item()
        sync()
        t1 = time.perf_counter()
        if i >= a.warmup:
            times.append(t1 - t0)
        t0 = t1
    total = sum(times)
    out = {
        "impl": "pytorch-eager",
        "model": a.model,
        "batch_size": a.batch_size,
        "data": a.data,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "ips": a.batch_size * len(times) / total,
        "step_s": [round(t, 4) for t in times],
    }
    if dev.type == "cuda":
        out["max_mem_gib"] = torch.cuda.max_memory_allocated() / 2**30
    print(json.dumps(out))


if __name__ == "__main__":
    main()
