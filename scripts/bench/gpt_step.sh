#!/usr/bin/env bash
# GPT training-step throughput, Rust (tch) vs PyTorch eager, same model/shapes/fp32/sdpa, CPU.
# Usage: scripts/bench/gpt_step.sh [tiny] [124m]   (from the repo root; builds the bench first)
set -euo pipefail
cd "$(dirname "$0")/../.."
export LIBTORCH_USE_PYTORCH=1 PATH="$PWD/.venv/bin:$PATH"
cases=("$@"); [ ${#cases[@]} -eq 0 ] && cases=(tiny 124m)
lscpu | grep 'Model name' || true
cargo bench -p modelzoo-gpt --bench train_step --no-run >/dev/null 2>&1
for c in "${cases[@]}"; do
  for round in 1 2; do
    cargo bench -q -p modelzoo-gpt --bench train_step -- "$c" 2>/dev/null | grep tokens/s
    python scripts/bench/gpt_step.py "$c"
  done
done
