#!/usr/bin/env bash
# dllogger benchmarks, side by side with their Python references, in one run:
#   writer: criterion `log` of 4 metrics to the JSON file backend vs tcap-style Python (100k logs)
#   reader: criterion throughput on a generated 200 MiB mixed log vs the loss.py regex loop
# Usage: scripts/bench/dllogger_bench.sh   (from the repository root; needs python3)
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "machine: $(lscpu | grep 'Model name' | sed 's/ \+/ /g'), $(nproc) cores"
cargo bench -p dllogger --bench writer 2>&1 | grep -E '^log|time:'
python3 scripts/bench/dllogger_writer_ref.py 100000
DLLOGGER_BENCH_LOG="$work/mixed.log" cargo bench -p dllogger --bench reader 2>&1 | grep -E '^reader|time:|thrpt:'
python3 scripts/bench/dllogger_lossregex_ref.py "$work/mixed.log"
