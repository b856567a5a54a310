#!/usr/bin/env bash
# Benchmark: `modelzoo compare` on two generated ~1 GB tcap stdout logs, side by side with the
# loss.py approach (compare_losspy.py: Python regex over the whole file) on the same files.
# Prints wall time, CPU time and peak memory of each. Not part of `make test`.
#
# usage: scripts/bench/compare_bench.sh [SIZE_MB] [WORKDIR]   (defaults: 1024, a temp dir)
set -euo pipefail
cd "$(dirname "$0")/../.."
size="${1:-1024}"
work="${2:-$(mktemp -d)}"
bin=target/release/modelzoo
[[ -x $bin ]] || { echo "build first: make build (or cargo build --release -p modelzoo-cli)" >&2; exit 2; }
mkdir -p "$work"
[[ -f $work/cuda.log ]] || python3 scripts/bench/compare_genlog.py "$work/cuda.log" "$size" 1.0
[[ -f $work/sdaa.log ]] || python3 scripts/bench/compare_genlog.py "$work/sdaa.log" "$size" 1.004
cat "$work/cuda.log" "$work/sdaa.log" > /dev/null   # both runs start from the page cache

echo "machine: $(lscpu | grep 'Model name' | sed 's/ \+/ /g'), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
ls -l "$work"/cuda.log "$work"/sdaa.log
fmt="wall %e s  user %U s  sys %S s  max RSS %M KB"
echo "--- modelzoo compare --rule modelzoo-loss"
/usr/bin/time -f "$fmt" "$bin" compare --baseline "$work/cuda.log" --candidate "$work/sdaa.log" \
    --rule modelzoo-loss --json > "$work/rust.json" || true
grep -E '"(mean_rel_err_signed|mean_diff_signed|steps_compared)"' "$work/rust.json"
echo "--- loss.py approach (python3 scripts/bench/compare_losspy.py)"
/usr/bin/time -f "$fmt" python3 scripts/bench/compare_losspy.py "$work/cuda.log" "$work/sdaa.log" || true
echo "--- modelzoo compare (default rel1) with --report-dir"
/usr/bin/time -f "$fmt" "$bin" compare --baseline "$work/cuda.log" --candidate "$work/sdaa.log" \
    --report-dir "$work/report" > /dev/null || true
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
