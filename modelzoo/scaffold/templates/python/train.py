"""{{title}}: the training script `run_scripts/run_{{run}}.py` launches (one process, or one per
device under torchrun). Scaffolded by `modelzoo new {{name}} --kind python`: it trains a small
CNN on synthetic images as it is, so the model passes `modelzoo ci` before the real model is in.
Replace `build_model` and `train_data` (the TODOs) with the model and dataset being ported.

    python train.py --device cpu|cuda|sdaa [--autocast] [--step N] [--batch_size B] ...

Logs `train.loss` and `train.ips` per step with tcap_dllogger (stdout and
OUTPUT_DIR/dllogger.json), as the ModelZoo's PR check and `modelzoo compare` read them.
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from tcap_dllogger import JSONStreamBackend, Logger, StdOutBackend, Verbosity


def str2bool(v):
    """`--autocast`, `--autocast True` and `--autocast false` alike (the ModelZoo check passes
    a value)."""
    if isinstance(v, bool):
        return v
    if v.lower() in ("yes", "true", "t", "y", "1"):
        return True
    if v.lower() in ("no", "false", "f", "n", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected a boolean (true/false), got {v!r}")


def parse_args():
    p = argparse.ArgumentParser(description="{{title}} training")
    p.add_argument("--model_name", default="{{run}}")
    p.add_argument("--epoch", "--epochs", type=int, default=1)
    p.add_argument("--step", "--steps", type=int, default=-1, help="stop after N steps; -1: every epoch")
    p.add_argument("--batch_size", "--bs", type=int, default=32)
    p.add_argument("--dataset_path", default=None)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--device", default="sdaa", choices=["cpu", "cuda", "sdaa"])
    p.add_argument("--autocast", "--amp", type=str2bool, nargs="?", const=True, default=False)
    p.add_argument("--num_workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--output_dir", default="./output")
    return p.parse_args()


def setup(device_name):
    """The device of this process, and whether it is one rank of a data-parallel job."""
    if device_name == "sdaa":
        import torch_sdaa  # noqa: F401  (registers the sdaa device; before any backward pass)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if device_name == "cpu":
        device = torch.device("cpu")
    else:
        getattr(torch, device_name).set_device(local_rank)
        device = torch.device(device_name, local_rank)
    if world > 1:
        dist.init_process_group({"cpu": "gloo", "cuda": "nccl", "sdaa": "tccl"}[device_name])
    return device, world > 1


def build_model():
    # TODO: the model being ported.
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1, stride=2), nn.BatchNorm2d(32), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10),
    )


def train_data(args, device, rank, world):
    # TODO: the real dataset (--dataset_path); synthetic 32x32 images until then.
    g = torch.Generator().manual_seed(args.seed)
    images = torch.randn(1024, 3, 32, 32, generator=g)
    labels = torch.randint(0, 10, (1024,), generator=g)
    data = torch.utils.data.TensorDataset(images, labels)
    sampler = torch.utils.data.distributed.DistributedSampler(
        data, num_replicas=world, rank=rank, shuffle=True, seed=args.seed
    )
    return torch.utils.data.DataLoader(
        data, batch_size=args.batch_size, sampler=sampler, num_workers=args.num_workers,
        pin_memory=device.type != "cpu", drop_last=True,
    ), sampler


def main():
    args = parse_args()
    device, distributed = setup(args.device)
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    torch.manual_seed(args.seed)
    os.makedirs(args.output_dir, exist_ok=True)
    log = Logger([
        StdOutBackend(Verbosity.DEFAULT),
        JSONStreamBackend(Verbosity.VERBOSE, os.path.join(args.output_dir, "dllogger.json")),
    ])
    log.metadata("train.loss", {"unit": "", "GOAL": "MINIMIZE", "STAGE": "TRAIN"})
    log.metadata("train.ips", {"unit": "imgs/s", "format": ":.3f", "GOAL": "MAXIMIZE", "STAGE": "TRAIN"})

    model = build_model().to(device)
    if distributed:
        model = nn.parallel.DistributedDataParallel(
            model, device_ids=None if device.type == "cpu" else [device.index]
        )
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    # AMP as on the card: fp16 with loss scaling on cuda/sdaa, bf16 on the CPU.
    amp_dtype = torch.bfloat16 if device.type == "cpu" else torch.float16
    scaler = torch.amp.GradScaler(device.type, enabled=args.autocast and amp_dtype == torch.float16)
    loader, sampler = train_data(args, device, rank, world)

    step = 0
    for epoch in range(args.epoch):
        sampler.set_epoch(epoch)
        for images, labels in loader:
            start = time.perf_counter()
            images = images.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            with torch.autocast(device.type, dtype=amp_dtype, enabled=args.autocast):
                loss = nn.functional.cross_entropy(model(images), labels)
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            value = loss.item()  # waits for the step: the time below is the step's
            ips = images.shape[0] * world / (time.perf_counter() - start)
            log.log(step=(epoch, step), data={"train.loss": value, "train.ips": ips},
                    verbosity=Verbosity.DEFAULT)
            step += 1
            if step == args.step:
                break
        if step == args.step:
            break
    log.flush()
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
