#!/usr/bin/env python3
"""Write a tcap_dllogger stdout training log of about SIZE_MB megabytes for benchmarks:
4 ranks per iteration (as torchrun writes them), loss = a decaying curve times SCALE plus
deterministic noise, 100 iterations per epoch, an env banner at the top.

usage: compare_genlog.py OUT SIZE_MB SCALE
"""
import math
import sys


def main():
    out, size_mb, scale = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    target = int(size_mb * 1024 * 1024)
    written = 0
    it = 0
    with open(out, "w", buffering=1 << 22) as f:
        banner = " PyTorch      | 2.4.0a0+git4451b0e\n Torch-SDAA   | 2.1.1b0+gitebfa9da\n"
        f.write(banner)
        written += len(banner)
        while written < target:
            base = 2.5 * math.exp(-it / 200000.0) + 0.05 * abs(math.sin(it * 0.7)) + 0.3
            chunk = []
            for rank in range(4):
                loss = base * scale * (1.0 + 0.001 * rank)
                chunk.append(
                    f"TCAPPDLL 2025-05-15 14:20:10.930385 - Epoch: {it // 100} Iteration: {it % 100}"
                    f"  rank : {rank}  train.loss : {loss!r}  train.ips : {10415.778984944902 + rank} imgs/s\n"
                )
            s = "".join(chunk)
            f.write(s)
            written += len(s)
            it += 1
    print(f"{out}: {written} bytes, {it} iterations x 4 ranks")


if __name__ == "__main__":
    main()
