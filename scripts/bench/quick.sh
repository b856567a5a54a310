#!/usr/bin/env bash
# The performance regression check to run before a change that touches the training step lands
# (`make bench-quick`; timing is not a test, so it is not in `make test`): the two short cases of
# scripts/bench/step_bench.sh — run_resnet resnet18 batch 16 and run_gpt gpt_tiny, fp32, both
# comparisons (compute only and end to end) — alternating rounds against PyTorch eager, median
# ratios. A ratio below 1.0 means run_<model> is slower than the PyTorch a user already has.
# Figures taken while the machine is busy mean nothing: the load is printed before and after.
#
#   scripts/bench/quick.sh     ROUNDS=3, THREADS=nproc, PRECISIONS=fp32, MODES="compute e2e"
set -euo pipefail
export ROUNDS="${ROUNDS:-3}" THREADS="${THREADS:-$(nproc)}" PRECISIONS="${PRECISIONS:-fp32}"
export MODES="${MODES:-compute e2e}"
exec "$(dirname "${BASH_SOURCE[0]}")/step_bench.sh" "$@" resnet18 gpt_tiny
