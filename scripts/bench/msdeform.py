"""MultiScaleDeformableAttention on the CPU: the zoo's op (modelzoo_ops.msdeform.ms_deform_attn,
ATen ops with its own backward) against its grid_sample twin, forward + backward at a
Deformable-DETR-like size (N=2, 4 levels 32x32..4x4, Lq=300, M=8, D=32, P=4, float32).

Time: the median of ROUNDS alternating rounds (twin, op, twin, op, ...), each round the mean of
REPS forward+backward passes after one warm-up. Peak memory: the most bytes held at once by tensors
allocated during one forward+backward (torch.profiler's allocation records; the inputs, made
before, not counted; the gradients it leaves are).

    .venv/bin/python scripts/bench/msdeform.py [--rounds 5] [--reps 5] [--threads N]

Prints the CPU model, the load average and a Markdown table for docs/benchmarks.md.
"""

import argparse
import os
import statistics
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "modelzoo", "ops"))

from modelzoo_ops.msdeform import ms_deform_attn, ms_deform_attn_twin  # noqa: E402
from modelzoo_ops.msdeform.inputs import make  # noqa: E402

LEVELS = [(32, 32), (16, 16), (8, 8), (4, 4)]
HEADS, CHANNELS, QUERIES, POINTS, BATCH = 8, 32, 300, 4, 2
SIDES = {"twin": ms_deform_attn_twin, "op": ms_deform_attn}


def inputs():
    args, _ = make(LEVELS, HEADS, CHANNELS, QUERIES, POINTS, BATCH, torch.float32, "cpu", 0)
    grad = torch.randn(BATCH, QUERIES, HEADS * CHANNELS)
    return args, grad


def step(fn, args, grad):
    for a in (args[0], args[3], args[4]):
        a.grad = None
    fn(*args).backward(grad)


def timed(fn, args, grad, reps):
    start = time.perf_counter()
    for _ in range(reps):
        step(fn, args, grad)
    return (time.perf_counter() - start) / reps


def peak_mib(side):
    """The peak of bytes held by tensors allocated during one forward+backward (MiB): the
    running sum of the CPU allocator's allocations and frees recorded by torch.profiler."""
    args, grad = inputs()
    step(SIDES[side], args, grad)  # first pass: lazy initialisation
    for a in (args[0], args[3], args[4]):
        a.grad = None
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                profile_memory=True) as prof:
        step(SIDES[side], args, grad)
    events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events()
                    if e.name() == "[memory]")
    held = peak = 0
    for _, nbytes in events:
        held += nbytes
        peak = max(peak, held)
    return peak / 2**20


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    opts = parser.parse_args()
    if opts.threads:
        torch.set_num_threads(opts.threads)
    if opts.rounds < 3 or opts.reps < 1:
        parser.error("--rounds must be at least 3 and --reps at least 1")
    args, grad = inputs()
    for fn in SIDES.values():
        step(fn, args, grad)  # warm-up
    times = {side: [] for side in SIDES}
    load_before = os.getloadavg()
    for _ in range(opts.rounds):
        for side, fn in SIDES.items():
            times[side].append(timed(fn, args, grad, opts.reps))
    load_after = os.getloadavg()
    peaks = {side: peak_mib(side) for side in SIDES}
    print(f"CPU: {cpu_model()}, {torch.get_num_threads()} torch threads, torch {torch.__version__}")
    print(f"load average before {load_before[0]:.2f} {load_before[1]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f}")
    print(f"size: N={BATCH}, levels {LEVELS}, Lq={QUERIES}, M={HEADS}, D={CHANNELS}, "
          f"P={POINTS}, float32; {opts.rounds} alternating rounds of {opts.reps} passes")
    print()
    print("| side | forward+backward, median ms (min-max) | peak memory allocated, MiB |")
    print("|---|---|---|")
    for side in SIDES:
        ms = [t * 1000 for t in times[side]]
        print(f"| {side} | {statistics.median(ms):.1f} ({min(ms):.1f}-{max(ms):.1f}) | "
              f"{peaks[side]:.1f} |")
    ratio = statistics.median(times["op"]) / statistics.median(times["twin"])
    print(f"\nop / twin time: {ratio:.2f}x; op / twin peak memory: "
          f"{peaks['op'] / max(peaks['twin'], 1e-9):.2f}x")


if __name__ == "__main__":
    main()
