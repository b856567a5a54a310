"""PyTorch DDP (Gloo) reference for the DDP scaling benchmark: torchvision ResNet-18, SGD
(momentum 0.9, weight decay 1e-4), cross-entropy on one fixed synthetic batch per rank, one
intra-op thread per process, timed after warm-up. Run under torchrun for 2+ workers (or plain
python for 1). Rank 0 prints one JSON line with the job's images/s (sum over ranks)."""

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torchvision
from torch.nn.parallel import DistributedDataParallel


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch_size", type=int, default=16)
    p.add_argument("--image_size", type=int, default=64)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--gradient_as_bucket_view", action="store_true",
                   help="DDP's gradient_as_bucket_view=True (run_resnet's reducer setting)")
    a = p.parse_args()
    torch.set_num_threads(1)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=1000)
    if world > 1:
        model = DistributedDataParallel(model, gradient_as_bucket_view=a.gradient_as_bucket_view)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    x = torch.randn(a.batch_size, 3, a.image_size, a.image_size)
    y = torch.randint(0, 1000, (a.batch_size,))
    loss_fn = torch.nn.CrossEntropyLoss()
    for i in range(a.warmup + a.steps):
        if i == a.warmup:
            start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    secs = time.perf_counter() - start
    ips = torch.tensor([a.batch_size * a.steps / secs], dtype=torch.float64)
    if world > 1:
        dist.all_reduce(ips)
        dist.destroy_process_group()
    if int(os.environ.get("RANK", "0")) == 0:
        print(json.dumps({"world": world, "ips": round(ips.item(), 2), "loss": loss.item()}), flush=True)
    if world > 1:
        # Skip the interpreter's teardown: there the DDP reducer (kept alive by a reference
        # cycle) frees ProcessGroupGloo with the GIL held while a Gloo thread waits for the GIL
        # to free its last work's tensors, a deadlock seen here (gdb: ~ProcessGroupGloo waiting
        # on its mutex, pt_gloo_runloop in take_gil), and an abort ("terminate called without
        # an active exception") elsewhere; upstream discussion: pytorch/pytorch#179291.
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
