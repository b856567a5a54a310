#!/usr/bin/env bash
# dllogger benchmarks, side by side with their Python references, in one run:
#   writer: criterion `log` of 4 metrics to the JSON file backend vs tcap-style Python (100k logs)
#   reader: criterion throughput on a generated 200 MiB mixed log vs the loss.py regex loop
# Usage: scripts/bench/dllogger_bench.sh   (from the repository root; needs python3)
set -euo pipefail
cd "$(dirname "$0")/../.."
target=${CARGO_TARGET_DIR:-target}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "machine: $(lscpu | grep 'Model name' | sed 's/ \+/ /g'), $(nproc) cores; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
median() { # criterion's median estimate of a benchmark, in ns
    python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['median']['point_estimate'])" \
        "$target/criterion/$1/new/estimates.json"
}
cargo bench -p dllogger --bench writer 2>&1 | grep -E '^log|^writer|time:'
for b in log_4_metrics_json_file writer_100k/log_100k_json_file log_4_metrics_json_to_sink log_4_metrics_stdout_format_to_sink; do
    printf '%s median: %.0f ns\n' "$b" "$(median "$b")"
done
python3 scripts/bench/dllogger_writer_ref.py 100000
DLLOGGER_BENCH_LOG="$work/mixed.log" cargo bench -p dllogger --bench reader 2>&1 | grep -E '^reader|time:|thrpt:'
size=$(stat -c %s "$work/mixed.log")
printf 'reader median: %.3f s = %.1f MiB/s\n' "$(median reader/read_mixed_200MiB | awk '{print $1/1e9}')" \
    "$(median reader/read_mixed_200MiB | awk -v s="$size" '{print s/1048576/($1/1e9)}')"
python3 scripts/bench/dllogger_lossregex_ref.py "$work/mixed.log"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
