#!/usr/bin/env python3
"""Reference for the dllogger reader benchmark: the ModelZoo run_scripts/loss.py extraction
(`re.findall(r'rank : 0  train.loss : ([\\d\\.e-]+)', line)` over the file's lines, falling
back to `loss ([\\d\\.e-]+)` when the first finds nothing). Prints MB/s."""
import os, re, sys, time

path = sys.argv[1]
size = os.path.getsize(path)
t0 = time.perf_counter()
losses = []
with open(path, "r", errors="replace") as f:
    for line in f:
        losses.extend(re.findall(r"rank : 0  train.loss : ([\d\.e-]+)", line))
if not losses:
    with open(path, "r", errors="replace") as f:
        for line in f:
            losses.extend(re.findall(r"loss ([\d\.e-]+)", line))
dt = time.perf_counter() - t0
print(f"python loss.py regex loop: {len(losses)} losses from {size / 2**20:.0f} MiB in {dt:.2f} s = {size / 2**20 / dt:.1f} MiB/s")
