#!/usr/bin/env bash
# End-to-end GPT training throughput: the run_gpt binary itself (engine, AdamW, FleetX cosine,
# global-norm clip, built-in corpus, fp32, dropout 0) against the same training in PyTorch
# eager (scripts/bench/gpt_e2e.py: same torch, config, sdpa, AdamW, batch/seq, thread count),
# alternating run_gpt / PyTorch rounds (A/B/A/B) so machine load hits both equally.
#
# Usage (repo root): scripts/bench/gpt_e2e.sh [tiny] [124m]
#   ROUNDS=2 (A/B pairs per case), THREADS=2 (OMP_NUM_THREADS for both sides),
#   DEVICE=cpu (or cuda: both sides run there), AMP= (or bf16 / fp16: autocast on both sides)
# Tokens/s = total tokens / total time over the steps after the first SKIP: for run_gpt from
# train.ips of its own JSON log (Engine.logging_freq=1), for PyTorch timed the same way.
set -euo pipefail
cd "$(dirname "$0")/../.."
export LIBTORCH_USE_PYTORCH=1 PATH="$PWD/.venv/bin:$PATH"
export OMP_NUM_THREADS="${THREADS:-2}" RUST_LOG=warn
ROUNDS="${ROUNDS:-2}" DEVICE="${DEVICE:-cpu}" AMP="${AMP:-}"
ours_amp=() ref_amp=()
if [[ -n $AMP ]]; then ours_amp=(--autocast --amp_dtype "$AMP"); ref_amp=(--amp "$AMP"); fi
cases=("$@"); [ ${#cases[@]} -eq 0 ] && cases=(tiny 124m)
for c in "${cases[@]}"; do
  case "$c" in tiny|124m) ;; *) echo "error: unknown case '$c'; use tiny or 124m" >&2; exit 2 ;; esac
done

cargo build -q --release -p modelzoo-gpt --bin run_gpt
BIN="$PWD/target/release/run_gpt"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "machine: $(lscpu | grep 'Model name' | sed 's/  */ /g'), $(nproc --all) cores, OMP_NUM_THREADS=$OMP_NUM_THREADS"
echo "torch: $(python -W ignore -c 'import torch; print(torch.__version__)' 2>/dev/null)"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

for c in "${cases[@]}"; do
  case "$c" in
    # config, batch, seq, steps, skipped warm-up steps
    tiny) cfg=modelzoo/gpt/configs/gpt_tiny.yaml; batch=16; seq=64; steps=40; skip=5 ;;
    124m) cfg=modelzoo/gpt/configs/gpt_124m.yaml; batch=1; seq=128; steps=7; skip=2 ;;
  esac
  echo "== $c: batch $batch x seq $seq, $steps steps, first $skip excluded, ${AMP:-fp32}, $DEVICE"
  for round in $(seq "$ROUNDS"); do
    out="$tmp/$c-$round"
    # Precision comes from AMP alone: the configs' own mix_precision (gpt_124m.yaml turns on
    # use_pure_fp16, i.e. bf16 autocast on the CPU) is switched off, so both sides run the same.
    "$BIN" -c "$cfg" --step "$steps" --output_dir "$out" --seed 42 --device "$DEVICE" "${ours_amp[@]}" \
      -o Engine.mix_precision.use_pure_fp16=False \
      -o Data.batch_size.global_batch_size="$batch" -o Data.batch_size.local_batch_size="$batch" \
      -o Data.batch_size.micro_batch_size="$batch" -o Data.dataset.max_seq_len="$seq" \
      -o Data.dataset.input_dir= -o Model.hidden_dropout_prob=0 \
      -o Model.attention_probs_dropout_prob=0 -o Engine.logging_freq=1 \
      -o Engine.eval_freq=1000000 -o Engine.eval_iters=1 \
      -o Engine.save_load.save_steps=1000000 >"$out.stdout" 2>"$out.stderr" \
      || { echo "run_gpt failed:"; cat "$out.stderr"; exit 1; }
    echo "round $round A: $(python scripts/bench/gpt_e2e.py log "$out/gpt_log.json" --skip "$skip")  [load $(cut -d' ' -f1 /proc/loadavg)]"
    echo "round $round B: $(python -W ignore scripts/bench/gpt_e2e.py run "$cfg" --batch "$batch" --seq "$seq" --steps "$steps" --skip "$skip" --device "$DEVICE" "${ref_amp[@]}")  [load $(cut -d' ' -f1 /proc/loadavg)]"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
