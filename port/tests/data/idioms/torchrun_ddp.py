"""Idiom (distributed/ddp, the DDP tutorial): under `torchrun --nproc_per_node 2`, check the
GPU count, pick the device by local rank through torch.accelerator, NCCL with a device_id, DDP
with device_ids, a DistributedSampler and a pinned loader. `torchrun ... torchrun_ddp.py
cuda|cpu`: rank 0 prints RESULT. `python torchrun_ddp.py reference` computes the same in one
process (each step: the mean of both ranks' gradients, as DDP's allreduce)."""

import json
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

if sys.argv[1] == "reference":
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(16, 4), torch.randn(16, 1))
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for step in range(2):
        grads = []
        for r in range(2):  # DistributedSampler without shuffling: rank r takes r, r+2, ...
            x, y = data[[r + 2 * (4 * step + i) for i in range(4)]]
            loss = torch.nn.functional.mse_loss(model(x), y)
            grads.append(torch.autograd.grad(loss, list(model.parameters())))
            if r == 0:
                losses.append(loss.item())
        for p, g0, g1 in zip(model.parameters(), *grads):
            p.grad = g0 / 2 + g1 / 2
        opt.step()
    print("RESULT " + json.dumps({"losses": losses, "counts": [2, 2],
                                  "weight": model.weight.detach().flatten().tolist()}))
    sys.exit(0)
cuda = sys.argv[1] == "cuda"
rank = int(os.environ["LOCAL_RANK"])
world = int(os.environ["WORLD_SIZE"])
if cuda:
    if torch.accelerator.device_count() < world:
        sys.exit(f"Unable to locate sufficient {world} gpus")
    acc = torch.accelerator.current_accelerator()
    torch.accelerator.set_device_index(rank)
    device = torch.device(acc.type, rank)
    backend = dist.get_default_backend_for_device(device)
    dist.init_process_group(backend=backend, device_id=device)
else:
    device = torch.device("cpu")
    dist.init_process_group(backend="gloo")
torch.manual_seed(0)
data = TensorDataset(torch.randn(16, 4), torch.randn(16, 1))
loader = DataLoader(data, batch_size=4, pin_memory=cuda, sampler=DistributedSampler(data,
                                                                                  shuffle=False))
model = torch.nn.Linear(4, 1).to(rank if cuda else device)
ddp = DDP(model, device_ids=[rank] if cuda else None)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
losses = []
for x, y in loader:
    loss = torch.nn.functional.mse_loss(ddp(x.to(rank if cuda else device)), y.to(device))
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
counts = [torch.cuda.device_count(), torch.accelerator.device_count()] if cuda else [2, 2]
weight = ddp.module.weight.detach().flatten().tolist()
dist.destroy_process_group()
if rank == 0:
    print("RESULT " + json.dumps({"losses": losses, "weight": weight, "counts": counts}))
