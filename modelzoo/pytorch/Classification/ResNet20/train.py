"""ResNet-20 on CIFAR-10 (He et al., "Deep Residual Learning for Image Recognition", 2016, §4.2):
the training script `run_scripts/run_resnet20.py` launches — one process, or one per device
under torchrun. Plain PyTorch, written for the zoo: the same script runs on cpu, cuda and sdaa
(torch_sdaa), with DDP (gloo / nccl / tccl) and AMP (fp16 with loss scaling on cuda/sdaa, bf16 on
the CPU), and logs `train.loss` / `train.ips` per step and `val.loss` / `val.top1` per epoch
with tcap_dllogger (stdout and OUTPUT_DIR/dllogger.json).

    python train.py --device cpu|cuda|sdaa [--autocast] [--step N] [--epoch E]
                    [--dataset_path DIR/cifar-10-batches-py] [--batch_size B] [--lr LR] ...

`--dataset_path` is the CIFAR-10 "python version" (data_batch_1..5, test_batch); without it
the model trains on synthetic images of the same shape (for functional runs and CI).
"""
import argparse
import os
import pickle
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from tcap_dllogger import JSONStreamBackend, Logger, StdOutBackend, Verbosity

# Per-channel mean and std of the CIFAR-10 training images.
MEAN = (0.4914, 0.4822, 0.4465)
STD = (0.2470, 0.2435, 0.2616)


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
    p = argparse.ArgumentParser(description="ResNet-20 on CIFAR-10")
    p.add_argument("--model_name", default="resnet20", choices=["resnet20"])
    p.add_argument("--epoch", "--epochs", type=int, default=1)
    p.add_argument("--step", "--steps", type=int, default=-1, help="stop after N steps; -1: every epoch")
    p.add_argument("--batch_size", "--bs", type=int, default=128)
    p.add_argument("--dataset_path", default=None)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--device", default="sdaa", choices=["cpu", "cuda", "sdaa"])
    p.add_argument("--autocast", "--amp", type=str2bool, nargs="?", const=True, default=False)
    p.add_argument("--num_workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--output_dir", default="./output")
    a = p.parse_args()
    if a.batch_size < 1 or a.epoch < 1 or a.step == 0 or a.step < -1:
        p.error("--batch_size and --epoch must be >= 1, --step >= 1 (or -1 for every epoch)")
    return a


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a shortcut; option A of the paper (identity, zero-padded
    channels and strided subsampling when the shape changes)."""

    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.pad = c_out - c_in
        self.stride = stride

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        shortcut = x[:, :, :: self.stride, :: self.stride] if self.stride > 1 else x
        if self.pad:
            shortcut = F.pad(shortcut, (0, 0, 0, 0, 0, self.pad))
        return F.relu(out + shortcut)


class ResNet20(nn.Module):
    """3 stages of 3 blocks (16, 32, 64 channels), global pooling, a linear classifier:
    0.27M parameters."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        blocks, c_in = [], 16
        for c_out, stride in ((16, 1), (32, 2), (64, 2)):
            for i in range(3):
                blocks.append(BasicBlock(c_in, c_out, stride if i == 0 else 1))
                c_in = c_out
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(64, num_classes)
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_normal_(m.weight)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        x = self.blocks(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def load_cifar(root, train):
    """CIFAR-10's python batches as uint8 images [N, 3, 32, 32] and labels."""
    names = [f"data_batch_{i}" for i in range(1, 6)] if train else ["test_batch"]
    images, labels = [], []
    for name in names:
        path = os.path.join(root, name)
        if not os.path.isfile(path):
            raise SystemExit(f"--dataset_path {root}: no {name} (give the directory of CIFAR-10's python version, cifar-10-batches-py)")
        with open(path, "rb") as f:
            batch = pickle.load(f, encoding="bytes")
        images.append(torch.tensor(batch[b"data"], dtype=torch.uint8).view(-1, 3, 32, 32))
        labels.append(torch.tensor(batch[b"labels"], dtype=torch.int64))
    return torch.cat(images), torch.cat(labels)


def synthetic(n, seed):
    """Random images and labels of CIFAR-10's shape."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (n, 3, 32, 32), generator=g, dtype=torch.uint8), torch.randint(0, 10, (n,), generator=g)


class Images(torch.utils.data.Dataset):
    """uint8 images normalised to float; the training set with the paper's augmentation (4-pixel
    padding, random 32x32 crop, horizontal flip)."""

    def __init__(self, images, labels, train):
        self.images, self.labels, self.train = images, labels, train
        self.mean = torch.tensor(MEAN).view(3, 1, 1)
        self.std = torch.tensor(STD).view(3, 1, 1)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        x = self.images[i].float().div_(255)
        if self.train:
            x = F.pad(x, (4, 4, 4, 4))
            top, left = torch.randint(0, 9, (2,)).tolist()
            x = x[:, top : top + 32, left : left + 32]
            if torch.rand(()) < 0.5:
                x = x.flip(2)
        return (x - self.mean) / self.std, self.labels[i]


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


def loaders(args, device, rank, world):
    if args.dataset_path:
        train, val = load_cifar(args.dataset_path, True), load_cifar(args.dataset_path, False)
    else:
        train, val = synthetic(2048, args.seed), synthetic(512, args.seed + 1)
    train_set, val_set = Images(*train, train=True), Images(*val, train=False)
    sampler = torch.utils.data.distributed.DistributedSampler(
        train_set, num_replicas=world, rank=rank, shuffle=True, seed=args.seed
    )
    val_sampler = torch.utils.data.distributed.DistributedSampler(
        val_set, num_replicas=world, rank=rank, shuffle=False
    )
    common = dict(batch_size=args.batch_size, num_workers=args.num_workers, pin_memory=device.type != "cpu")
    return (
        torch.utils.data.DataLoader(train_set, sampler=sampler, drop_last=True, **common),
        torch.utils.data.DataLoader(val_set, sampler=val_sampler, **common),
        sampler,
    )


def evaluate(model, loader, device, amp_dtype, autocast, distributed):
    """Mean loss and top-1 accuracy (%) over the validation set, all ranks together."""
    model.eval()
    totals = torch.zeros(3, dtype=torch.float32, device=device)  # loss sum, correct, count
    with torch.no_grad():
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            with torch.autocast(device.type, dtype=amp_dtype, enabled=autocast):
                logits = model(images)
            totals[0] += F.cross_entropy(logits.float(), labels, reduction="sum")
            totals[1] += (logits.argmax(1) == labels).sum()
            totals[2] += labels.numel()
    if distributed:
        dist.all_reduce(totals)
    model.train()
    loss, correct, count = totals.tolist()
    return loss / count, 100.0 * correct / count


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
    log.log(step="PARAMETER", data={"model_name": args.model_name, "batch_size": args.batch_size,
                                    "world_size": world, "lr": args.lr, "seed": args.seed,
                                    "autocast": args.autocast, "device": args.device},
            verbosity=Verbosity.DEFAULT)
    log.metadata("train.loss", {"unit": "", "GOAL": "MINIMIZE", "STAGE": "TRAIN"})
    log.metadata("train.ips", {"unit": "imgs/s", "format": ":.3f", "GOAL": "MAXIMIZE", "STAGE": "TRAIN"})
    log.metadata("val.loss", {"unit": "", "GOAL": "MINIMIZE", "STAGE": "VALID"})
    log.metadata("val.top1", {"unit": "%", "GOAL": "MAXIMIZE", "STAGE": "VALID"})

    model = ResNet20().to(device)
    if distributed:
        model = nn.parallel.DistributedDataParallel(
            model, device_ids=None if device.type == "cpu" else [device.index]
        )
    train_loader, val_loader, sampler = loaders(args, device, rank, world)
    steps_per_epoch = len(train_loader)
    total = steps_per_epoch * args.epoch if args.step < 0 else min(args.step, steps_per_epoch * args.epoch)
    # The paper's recipe: SGD with momentum 0.9 and weight decay 1e-4, the learning rate
    # divided by 10 at 50% and 75% of the run.
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[total // 2, total * 3 // 4], gamma=0.1)
    amp_dtype = torch.bfloat16 if device.type == "cpu" else torch.float16
    scaler = torch.amp.GradScaler(device.type, enabled=args.autocast and amp_dtype == torch.float16)

    step = 0
    for epoch in range(args.epoch):
        sampler.set_epoch(epoch)
        for images, labels in train_loader:
            start = time.perf_counter()
            images = images.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            with torch.autocast(device.type, dtype=amp_dtype, enabled=args.autocast):
                loss = F.cross_entropy(model(images), labels)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            sched.step()
            value = loss.item()  # waits for the step: the time below is the step's
            ips = images.shape[0] * world / (time.perf_counter() - start)
            log.log(step=(epoch, step), data={"train.loss": value, "train.ips": ips},
                    verbosity=Verbosity.DEFAULT)
            step += 1
            if step == total:
                break
        val_loss, top1 = evaluate(model, val_loader, device, amp_dtype, args.autocast, distributed)
        log.log(step=(epoch, step), data={"val.loss": val_loss, "val.top1": top1}, verbosity=Verbosity.DEFAULT)
        if step == total:
            break
    log.flush()
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
