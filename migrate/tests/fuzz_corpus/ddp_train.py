"""Data-parallel training the CUDA way: NCCL under torchrun, one GPU per process
(`torch.cuda.set_device(local_rank)`, `DistributedDataParallel(device_ids=[local_rank])`), a
DistributedSampler, losses printed by rank 0. `modelzoo port`'s tests port it (TCCL on SDAA).

    torchrun --standalone --nproc_per_node 2 train.py [--steps N]
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=4)
    a = p.parse_args()
    dist.init_process_group(backend="nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(128, 20, generator=g), torch.randn(128, 1, generator=g))
    sampler = DistributedSampler(data, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=16, sampler=sampler)
    model = DDP(nn.Sequential(nn.Linear(20, 32), nn.Tanh(), nn.Linear(32, 1)).cuda(), device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    step = 0
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        avg = loss.detach().clone()
        dist.all_reduce(avg)
        if dist.get_rank() == 0:
            print(f"step {step} loss {avg.item() / dist.get_world_size():.6f}", flush=True)
        step += 1
        if step == a.steps:
            break
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
