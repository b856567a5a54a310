#!/bin/bash
# Time `modelzoo migrate` (dry run: diff to /dev/null) on ONE generated file of 15k, 30k, 120k,
# 500k and 1M lines (issue #28: it was quadratic in a file's size — 1.4 s at 15k lines, 92 s
# at 120k). Rounds alternate over the sizes (so a burst of load hits every size alike); each
# figure is the median of ROUNDS runs. Prints a Markdown table with the time per 100k lines (flat
# when linear), peak memory, and the load average before and after.
#
# usage: scripts/bench/migrate_size_bench.sh [ROUNDS=3] [SIZES="15000 30000 120000 500000 1000000"]
#   BIN=path       the binary to time (default target/release/modelzoo; `make build` builds it)
#   BASELINE=path  also time another build (e.g. the quadratic one) in the same rounds, on the
#                  sizes up to BASELINE_MAX_LINES (default 120000)
# The files are generated (scripts/bench/migrate_gen.py --lines) into a temp dir and removed.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}
SIZES=${2:-"15000 30000 120000 500000 1000000"}
BIN=${BIN:-target/release/modelzoo}
BASELINE=${BASELINE:-}
BASELINE_MAX_LINES=${BASELINE_MAX_LINES:-120000}
[[ -x $BIN ]] || { echo "error: $BIN missing; run 'make build' first" >&2; exit 2; }
if [[ -n $BASELINE && ! -x $BASELINE ]]; then
  echo "error: BASELINE=$BASELINE is not an executable" >&2
  exit 2
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/migrate-size-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
for n in $SIZES; do
  mkdir -p "$WORK/$n"
  python3 scripts/bench/migrate_gen.py --lines "$n" "$WORK/$n/train_big.py"
done
echo "machine: $(lscpu | grep 'Model name' | sed 's/ \+/ /g'), $(nproc) cores"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$WORK" "$ROUNDS" "$BIN" "$BASELINE" "$BASELINE_MAX_LINES" $SIZES <<'PYEOF'
import os, statistics, subprocess, sys, time

work, rounds, binary, baseline, base_max = sys.argv[1], int(sys.argv[2]), *sys.argv[3:6]
sizes = [int(s) for s in sys.argv[6:]]
base_max = int(base_max)
tools = [("modelzoo migrate", binary)]
if baseline:
    tools.append(("baseline", baseline))


def run(exe, d):
    """Wall seconds and peak RSS (MiB) of one dry run."""
    with open(os.devnull, "wb") as null:
        t0 = time.perf_counter()
        p = subprocess.Popen([exe, "migrate", d], stdout=null, stderr=null)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"error: {exe} migrate {d} exited {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_maxrss / 1024


# Warm the page cache.
for n in sizes:
    with open(os.path.join(work, str(n), "train_big.py"), "rb") as f:
        f.read()
times = {(t, n): [] for t, _ in tools for n in sizes}
rss = {}
for r in range(rounds):
    for n in sizes:
        for name, exe in tools:
            if name == "baseline" and n > base_max:
                continue
            wall, peak = run(exe, os.path.join(work, str(n)))
            times[(name, n)].append(wall)
            rss[(name, n)] = max(rss.get((name, n), 0), peak)
    print(f"round {r + 1}/{rounds} done", file=sys.stderr)

print(f"| tool | lines | MB | wall s (median of {rounds}) | s per 100k lines | MB/s | peak RSS MiB |")
print("|---|---|---|---|---|---|---|")
for name, _ in tools:
    for n in sizes:
        ts = times[(name, n)]
        if not ts:
            continue
        mb = os.path.getsize(os.path.join(work, str(n), "train_big.py")) / 1e6
        med = statistics.median(ts)
        print(f"| {name} | {n:,} | {mb:.1f} | {med:.3f} | {med / n * 1e5:.3f} | {mb / med:,.1f} | {rss[(name, n)]:.0f} |")
first, last = sizes[0], sizes[-1]
a, b = statistics.median(times[("modelzoo migrate", first)]), statistics.median(times[("modelzoo migrate", last)])
print(f"\n{last / first:.0f}x the lines took {b / a:.1f}x the time (linear: {last / first:.0f}x; quadratic: {(last / first) ** 2:,.0f}x)")
PYEOF
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
