"""ResNet-50 ImageNet training, CUDA version (DDP + AMP), in the shape of pytorch/examples."""
import argparse
import os
import time

import torch
import torch_sdaa  # noqa: F401
import torch.backends.cudnn as cudnn
import torch.distributed as dist
import torch.nn as nn
from torch.sdaa.amp import GradScaler, autocast
from torch.nn.parallel import DistributedDataParallel as DDP
import torchvision

parser = argparse.ArgumentParser(description="PyTorch ImageNet Training")
parser.add_argument("--dist-backend", default="tccl", type=str, help="distributed backend")
parser.add_argument("--device", default='sdaa', choices=["cpu", "sdaa"], help="device to train on")
parser.add_argument("--amp", action="store_true", help="use torch.cuda.amp")


def setup(args):
    os.environ.setdefault("SDAA_VISIBLE_DEVICES", "0,1,2,3")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.sdaa.set_device(local_rank)
    dist.init_process_group(backend='tccl', init_method="env://")
    device = torch.device(f"sdaa:{local_rank}")
    cudnn.benchmark = True
    torch.backends.cudnn.deterministic = False
    return local_rank, device


def train(args):
    local_rank, device = setup(args)
    model = torchvision.models.resnet50().sdaa(local_rank)
    model = DDP(model, device_ids=[local_rank])
    criterion = nn.CrossEntropyLoss().sdaa()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = GradScaler(enabled=args.amp)
    for step in range(10):
        images = torch.randn(32, 3, 224, 224).to(device, non_blocking=True)
        target = torch.randint(0, 1000, (32,), device="sdaa:0")
        with autocast(enabled=args.amp):
            loss = criterion(model(images), target)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        torch.sdaa.synchronize()
        if step % 5 == 0 and dist.get_rank() == 0:
            mem = torch.sdaa.max_memory_allocated() / 2**20
            print(f"step {step} loss {loss.item():.4f} mem {mem:.0f}MiB")
    torch.cuda.nvtx.range_push("eval")
    with torch.autocast(device_type="sdaa", dtype=torch.float16):
        model.eval()
    torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    train(parser.parse_args())
