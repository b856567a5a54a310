# Older NVIDIA-style training loop with apex amp and apex DDP.
import torch
import torch_sdaa  # noqa: F401
from torch.nn.parallel import DistributedDataParallel as ApexDDP


def main(model, optimizer, loader):
    model.sdaa()
    scaler = torch.sdaa.amp.GradScaler()
    model = ApexDDP(model, delay_allreduce=True)
    for images, target in loader:
        images = images.sdaa(non_blocking=True)
        target = target.sdaa(non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(images), target)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
