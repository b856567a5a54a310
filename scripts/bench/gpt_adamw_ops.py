#!/usr/bin/env python3
"""Evidence for the engine's share of run_gpt's step time at 124M: the AdamW update as
modelzoo-engine's Optimizer::step writes it (out-of-place temporaries: g*(1-b1), g*g,
*(1-b2), sqrt, /sqrt(bc2), +eps, m/denom, *lr/bc1) plus its zero_grad (fill every gradient
with 0), against torch.optim.AdamW(foreach=False) (in-place lerp_/addcmul_/addcdiv_, one
sqrt temporary) plus zero_grad(set_to_none=True), and against a proposed in-place rewrite of
the engine's update (checked equal to it first), on GPT-2 small's parameter shapes, fp32,
CPU. Reports CPU seconds per update (process_time: insensitive to other load on the machine)
and wall seconds. Usage: OMP_NUM_THREADS=1 gpt_adamw_ops.py [steps]"""
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_step import GPT  # noqa: E402


def engine_step(params, state, lr, t, wd=0.01, b1=0.9, b2=0.999, eps=1e-8):
    with torch.no_grad():
        for p in params:
            g = p.grad
            m, v = state[p]
            if p.dim() > 1:
                p.mul_(1.0 - lr * wd)
            m.mul_(b1).add_(g * (1.0 - b1))
            v.mul_(b2).add_(g * g * (1.0 - b2))
            bc1, bc2 = 1.0 - b1**t, 1.0 - b2**t
            denom = v.sqrt() / math.sqrt(bc2) + eps
            update = (m / denom) * (lr / bc1)
            p.sub_(update)
        for p in params:  # Optimizer::zero_grad keeps the buffers
            p.grad.zero_()


def proposed_step(params, state, lr, t, wd=0.01, b1=0.9, b2=0.999, eps=1e-8):
    """The same update with the in-place ops tch 0.24 offers (`lerp_`, `addcmul_`,
    `addcdiv_` without a value argument): two temporaries per parameter instead of eight."""
    with torch.no_grad():
        for p in params:
            g = p.grad
            m, v = state[p]
            if p.dim() > 1:
                p.mul_(1.0 - lr * wd)
            m.lerp_(g, 1.0 - b1)
            v.mul_(b2).addcmul_(g, g * (1.0 - b2))
            bc1, bc2 = 1.0 - b1**t, 1.0 - b2**t
            if lr == 0.0:
                continue
            denom = v.sqrt()
            denom.div_(math.sqrt(bc2)).add_(eps).mul_(-bc1 / lr)
            p.addcdiv_(m, denom)
        for p in params:
            p.grad.zero_()


def check_same_update():
    """proposed_step == engine_step (fp32 rounding) over a few steps, lr 0 included."""
    torch.manual_seed(1)
    a = [torch.randn(64, 32), torch.randn(32)]
    b = [x.clone() for x in a]
    sa = {p: (torch.zeros_like(p), torch.zeros_like(p)) for p in a}
    sb = {p: (torch.zeros_like(p), torch.zeros_like(p)) for p in b}
    for t, lr in enumerate([0.0, 1e-3, 3e-3, 2e-3], start=1):
        for x, y in zip(a, b):
            x.grad = torch.randn_like(x)
            y.grad = x.grad.clone()
        engine_step(a, sa, lr, t)
        proposed_step(b, sb, lr, t)
    err = max((x - y).abs().max().item() for x, y in zip(a, b))
    if err > 1e-6:
        sys.exit(f"error: proposed update differs from the engine's by {err}")
    print(f"proposed in-place update == engine update (max |diff| {err:.1e} over 4 steps)")


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    torch.manual_seed(0)
    model = GPT(50304, 768, 12, 12, 1024)
    params = [p for p in model.parameters()]
    state = {p: (torch.zeros_like(p), torch.zeros_like(p)) for p in params}
    opt = torch.optim.AdamW(
        [
            {"params": [p for p in params if p.dim() > 1], "weight_decay": 0.01},
            {"params": [p for p in params if p.dim() <= 1], "weight_decay": 0.0},
        ],
        lr=6e-4,
        foreach=False,
    )

    def fresh_grads():  # what backward leaves: a gradient per parameter
        for p in params:
            p.grad = torch.randn_like(p) * 1e-3

    check_same_update()
    for name in ["engine", "torch", "proposed", "engine", "torch", "proposed"]:
        cpu = wall = 0.0
        for t in range(1, steps + 1):
            fresh_grads()
            c0, w0 = time.process_time(), time.perf_counter()
            if name == "engine":
                engine_step(params, state, 6e-4, t)
            elif name == "proposed":
                proposed_step(params, state, 6e-4, t)
            else:
                opt.step()
                opt.zero_grad()
            cpu += time.process_time() - c0
            wall += time.perf_counter() - w0
        print(
            f"{name:8} AdamW + zero_grad, {sum(p.numel() for p in params) / 1e6:.1f}M params, "
            f"{torch.get_num_threads()} threads: {cpu / steps:.3f} CPU s/update, "
            f"{wall / steps:.3f} wall s/update"
        )


if __name__ == "__main__":
    main()
