"""One rank of the torch_sdaa DDP test (test_torch_sdaa.py runs it under torchrun
--nproc_per_node 2): DDP training over the emulated TCCL, then the collectives one by one. It
writes rank<R>.json into argv[1] with what the test checks."""

import json
import os
import sys

import torch
import torch.distributed as dist

import torch_sdaa  # noqa: F401  (registers sdaa and the tccl backend)

STEPS = 3


def batch(rank):
    g = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(8, 6, generator=g)
    return x, x.sum(1, keepdim=True).tanh()


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 1))


def error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (the test checks the type and the text)
        return [type(e).__name__, str(e)]
    return None


def main(out_dir):
    dist.init_process_group(backend="tccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.sdaa.set_device(rank)
    dev = torch.device("sdaa", rank)
    result = {"rank": rank, "world": world, "backend": dist.get_backend()}

    net = torch.nn.parallel.DistributedDataParallel(model().to(dev), device_ids=[rank])
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = (t.to(dev) for t in batch(rank))
    for _ in range(STEPS):
        opt.zero_grad()
        torch.nn.functional.mse_loss(net(x), y).backward()
        opt.step()
    result["params"] = [p.detach().cpu().flatten().tolist() for p in net.module.parameters()]

    t = torch.arange(4, dtype=torch.float32, device=dev) + 10 * rank
    parts = [torch.empty(4, device=dev) for _ in range(world)]
    dist.all_gather(parts, t)
    result["all_gather"] = [p.cpu().tolist() for p in parts]
    into = torch.empty(world * 4, device=dev)
    dist.all_gather_into_tensor(into, t)
    result["all_gather_into_tensor"] = into.cpu().tolist()

    full = torch.arange(world * 3, dtype=torch.float32, device=dev) * (rank + 1)
    part = torch.empty(3, device=dev)
    dist.reduce_scatter_tensor(part, full)
    result["reduce_scatter_tensor"] = part.cpu().tolist()
    part2 = torch.empty(3, dtype=torch.float64, device=dev)
    dist.reduce_scatter(part2, [c.double() for c in full.chunk(world)], op=dist.ReduceOp.MAX)
    result["reduce_scatter_max"] = part2.cpu().tolist()

    b = torch.full((2, 3), float(rank), device=dev).t()  # non-contiguous
    dist.broadcast(b, src=1)
    result["broadcast"] = b.cpu().tolist()
    h = torch.full((3,), 0.5 * (rank + 1), dtype=torch.float16, device=dev)
    dist.all_reduce(h)
    result["all_reduce_fp16"] = h.cpu().tolist()
    red = torch.full((2,), rank + 1.0, device=dev)
    dist.reduce(red, dst=0, op=dist.ReduceOp.PRODUCT)
    result["reduce_product_to_0"] = red.cpu().tolist()
    m = torch.tensor([rank, -rank], dtype=torch.int64, device=dev)
    dist.all_reduce(m, op=dist.ReduceOp.MIN)
    result["all_reduce_min"] = m.cpu().tolist()
    bf = torch.full((5,), 1.5 + rank, dtype=torch.bfloat16, device=dev)
    dist.all_reduce(bf, op=dist.ReduceOp.AVG)
    result["all_reduce_bf16_avg"] = bf.float().cpu().tolist()

    # Larger than the emulated TCCL's 4 MiB slot per rank: the collectives run in chunks.
    n = (3 << 20) // 2 + 7
    big = torch.arange(n, dtype=torch.float32, device=dev) + rank
    dist.all_reduce(big)
    result["big_all_reduce"] = torch.equal(big.cpu(), 2 * torch.arange(n, dtype=torch.float32) + 1)
    gathered = torch.empty(world * n, device=dev)
    dist.all_gather_into_tensor(gathered, torch.full((n,), float(rank), device=dev))
    result["big_all_gather"] = torch.equal(gathered.cpu(), torch.arange(world).repeat_interleave(n).float())
    scattered = torch.empty(n, device=dev)
    dist.reduce_scatter_tensor(scattered, torch.arange(world * n, dtype=torch.float32, device=dev) + rank)
    want = 2 * (torch.arange(n, dtype=torch.float32) + rank * n) + 1
    result["big_reduce_scatter"] = torch.equal(scattered.cpu(), want)

    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank})
    result["all_gather_object"] = objs
    dist.barrier()

    result["cpu_tensor"] = error(lambda: dist.all_reduce(torch.ones(2)))
    result["send"] = error(lambda: dist.send(torch.ones(2, device=dev), dst=1 - rank))
    result["premul"] = error(lambda: dist.all_reduce(torch.ones(2, device=dev), op=dist.ReduceOp.BAND))

    dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w", encoding="utf-8") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1])
