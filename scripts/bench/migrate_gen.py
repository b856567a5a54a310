#!/usr/bin/env python3
"""Generate a large CUDA PyTorch tree for the migrate benchmark.

usage: migrate_gen.py OUT_DIR [FILES] [BYTES_PER_FILE]
Each file = the realistic CUDA training script of migrate/tests/data plus plain Python filler
(most real code never mentions the device), FILES files in 100-file packages.
"""
import os
import sys

out = sys.argv[1]
files = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
size = int(sys.argv[3]) if len(sys.argv) > 3 else 20_000
here = os.path.dirname(os.path.abspath(__file__))
seed = open(os.path.join(here, "../../migrate/tests/data/cuda_model/train.py")).read()
filler = (
    "\n\ndef helper_{n}(values, scale=1.0):\n"
    "    \"\"\"Scale and sum a list of numbers.\"\"\"\n"
    "    total = 0.0\n"
    "    for v in values:\n"
    "        total += v * scale\n"
    "    return total\n"
)
for i in range(files):
    d = os.path.join(out, f"pkg{i // 100:03d}")
    os.makedirs(d, exist_ok=True)
    parts = [seed]
    n = 0
    while sum(map(len, parts)) < size:
        parts.append(filler.format(n=n))
        n += 1
    with open(os.path.join(d, f"mod{i:05d}.py"), "w") as f:
        f.write("".join(parts))
