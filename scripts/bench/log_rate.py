#!/usr/bin/env python3
"""Steady-state throughput from a run_<model> dllogger JSON log (`<output_dir>/<model>_log.json`).

  log_rate.py LOG --skip W [--items N]

Reads the `LOG` records holding `train.ips` (and `train.mfu` when present) in order, drops the
first W (warm-up; with logging_freq 1 that is the first W steps), and prints one JSON line:
  {"ips": total items / total time, "steps": k, "mfu": mean train.mfu or null}
total items / total time is the harmonic mean of the per-step rates (each step holds the same
number of items). Used by scripts/bench/step_bench.sh and scripts/gpu-check.sh.
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--skip", type=int, required=True)
    a = ap.parse_args()
    ips, mfu = [], []
    with open(a.log, encoding="utf-8", errors="replace") as f:
        for line in f:
            brace = line.find("{")
            if '"LOG"' not in line or brace < 0:
                continue
            try:
                rec = json.loads(line[brace:])
            except ValueError:
                continue
            data = rec.get("data", {})
            if "train.ips" in data:
                ips.append(float(data["train.ips"]))
                mfu.append(data.get("train.mfu"))
    timed = ips[a.skip :]
    if not timed:
        sys.exit(f"log_rate: {a.log}: no train.ips after the first {a.skip} ({len(ips)} logged)")
    rate = len(timed) / sum(1.0 / v for v in timed)
    m = [float(v) for v in mfu[a.skip :] if v is not None]
    print(json.dumps({"ips": rate, "steps": len(timed), "mfu": sum(m) / len(m) if m else None}))


if __name__ == "__main__":
    main()
