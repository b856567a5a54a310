"""PyTorch eager reference for the run_resnet benchmark: torchvision ResNet, SGD(momentum 0.9,
weight decay 1e-4 on conv/linear weights only), cross-entropy, synthetic data, timed after
warm-up. Prints one JSON line: {"ips": images/s, "step_s": [...], ...}."""

import argparse
import json
import time

import torch
import torchvision


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="resnet50")
    p.add_argument("--batch_size", type=int, default=16)
    p.add_argument("--image_size", type=int, default=224)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--amp", action="store_true")
    p.add_argument("--channels_last", action="store_true")
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    dev = torch.device(a.device)
    model = getattr(torchvision.models, a.model)(num_classes=1000).to(dev)
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
    x = torch.randn(a.batch_size, 3, a.image_size, a.image_size, device=dev).to(memory_format=fmt)
    y = torch.randint(0, 1000, (a.batch_size,), device=dev)
    crit = torch.nn.CrossEntropyLoss()
    model.train()

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    times = []
    for i in range(a.warmup + a.steps):
        sync()
        t0 = time.perf_counter()
        with torch.autocast(dev.type, dtype=amp_dtype, enabled=a.amp):
            loss = crit(model(x), y)
        opt.zero_grad(set_to_none=False)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        loss.item()
        sync()
        if i >= a.warmup:
            times.append(time.perf_counter() - t0)
    total = sum(times)
    out = {
        "impl": "pytorch-eager",
        "model": a.model,
        "batch_size": a.batch_size,
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
