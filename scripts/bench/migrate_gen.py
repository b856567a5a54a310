#!/usr/bin/env python3
"""Generate CUDA PyTorch sources for the migrate benchmarks.

usage: migrate_gen.py OUT_DIR [FILES] [BYTES_PER_FILE]
    A tree: each file = the realistic CUDA training script of migrate/tests/data plus plain
    Python filler (most real code never mentions the device), FILES files in 100-file packages.

usage: migrate_gen.py --lines LINES OUT_FILE
    One file of LINES lines (issue #28: migrate was quadratic in a file's size), made of the test
    model's scripts one after another, over and over: train.py (DDP, AMP, device strings,
    cudnn flags, nvtx) then train_apex.py (apex amp and DDP) — rewrites and findings all through
    the file, the case a text diff is slowest on — cut at LINES lines.
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
model = os.path.join(here, "../../migrate/tests/data/cuda_model")


def read(name):
    with open(os.path.join(model, name)) as f:
        return f.read()


def single(lines, out):
    unit = (read("train.py") + read("train_apex.py")).splitlines(keepends=True)
    with open(out, "w") as f:
        written = 0
        while written < lines:
            take = unit[: lines - written]
            f.writelines(take)
            written += len(take)


def tree(out, files, size):
    seed = read("train.py")
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


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--lines":
        single(int(sys.argv[2]), sys.argv[3])
    elif len(sys.argv) >= 2 and not sys.argv[1].startswith("-"):
        tree(
            sys.argv[1],
            int(sys.argv[2]) if len(sys.argv) > 2 else 10_000,
            int(sys.argv[3]) if len(sys.argv) > 3 else 20_000,
        )
    else:
        sys.exit(__doc__)
