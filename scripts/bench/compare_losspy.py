#!/usr/bin/env python3
"""A re-creation of the Tecorigin ModelZoo's run_scripts/loss.py comparison, for benchmarks
and for cross-checking `modelzoo compare --rule modelzoo-loss`.

What loss.py does (see ../shared/fixtures/tecorigin-modelzoo/README.md): extract losses with
the regex `rank : 0  train.loss : ([\\d\\.e-]+)`, falling back to `loss ([\\d\\.e-]+)`, cut both
series to the shorter, and pass when mean((sdaa-cuda)/cuda) <= 0.05 or mean(sdaa-cuda) <= 0.0002
(signed means). Means are sequential sums divided by the count, as Python's sum() gives.

usage: compare_losspy.py CUDA_LOG SDAA_LOG
prints: n=<pairs> mean_rel=<repr> mean_diff=<repr> pass=<True|False>
"""
import re
import sys

PRIMARY = re.compile(r"rank : 0  train.loss : ([\d\.e-]+)")
FALLBACK = re.compile(r"loss ([\d\.e-]+)")


def extract(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    losses = PRIMARY.findall(text)
    if not losses:
        losses = FALLBACK.findall(text)
    return [float(x) for x in losses]


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    cuda, sdaa = extract(sys.argv[1]), extract(sys.argv[2])
    n = min(len(cuda), len(sdaa))
    if n == 0:
        print("no losses found", file=sys.stderr)
        return 2
    cuda, sdaa = cuda[:n], sdaa[:n]
    mean_rel = sum((s - c) / c for s, c in zip(sdaa, cuda)) / n
    mean_diff = sum(s - c for s, c in zip(sdaa, cuda)) / n
    ok = mean_rel <= 0.05 or mean_diff <= 0.0002
    print(f"n={n} mean_rel={mean_rel!r} mean_diff={mean_diff!r} pass={ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
