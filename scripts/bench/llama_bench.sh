#!/usr/bin/env bash
# LLaMA training throughput, side by side in one run: the run_llama binary itself (engine,
# AdamW, FleetX cosine, global-norm clip, built-in corpus) against transformers'
# LlamaForCausalLM trained the same way in PyTorch eager (scripts/bench/lm_e2e.py llama: same
# torch, architecture from the same config, sdpa, AdamW, batch/seq, thread count, precision,
# recompute), alternating run_llama / PyTorch rounds (A/B/A/B...) so machine load hits both
# equally. Prints each round, the median tokens/s of each side and the ratio run_llama / PyTorch.
#
# Usage (repo root): scripts/bench/llama_bench.sh [tiny] [1b]
#   ROUNDS=3 (A/B pairs per case, at least 3), THREADS=2 (OMP_NUM_THREADS for both sides),
#   DEVICE=cpu (or cuda), AMP= (or bf16 / fp16: autocast on both sides),
#   RECOMPUTE= (1: activation recompute on both sides), STEPS / SKIP / BATCH / SEQ override
#   the case's sizes (smoke runs); RUN_LLAMA (a built run_llama: no cargo build) and PYTHON (one
#   with torch and transformers) for scripts/gpu-check.sh on a GPU machine.
# A round's tokens/s = total tokens / total time over the steps after the first SKIP: for
# run_llama from train.ips of its own JSON log (Engine.logging_freq=1), for PyTorch timed the
# same way around each step.
set -euo pipefail
cd "$(dirname "$0")/../.."
export LIBTORCH_USE_PYTORCH=1 PATH="$PWD/.venv/bin:$PATH"
export OMP_NUM_THREADS="${THREADS:-2}" RUST_LOG=warn
ROUNDS="${ROUNDS:-3}" DEVICE="${DEVICE:-cpu}" AMP="${AMP:-}" RECOMPUTE="${RECOMPUTE:-}"
if (( ROUNDS < 3 )); then echo "error: ROUNDS=$ROUNDS; the median needs at least 3 rounds" >&2; exit 2; fi
ours_amp=() ref_amp=() ours_rc=(-o Model.use_recompute=False) ref_rc=()
if [[ -n $AMP ]]; then ours_amp=(--autocast --amp_dtype "$AMP"); ref_amp=(--amp "$AMP"); fi
if [[ -n $RECOMPUTE ]]; then ours_rc=(-o Model.use_recompute=True); ref_rc=(--recompute); fi
cases=("$@"); [ ${#cases[@]} -eq 0 ] && cases=(tiny)
for c in "${cases[@]}"; do
  case "$c" in tiny|1b) ;; *) echo "error: unknown case '$c'; use tiny or 1b" >&2; exit 2 ;; esac
done

py="${PYTHON:-python}"
if [[ -n ${RUN_LLAMA:-} ]]; then
  BIN="$RUN_LLAMA"
else
  cargo build -q --release -p modelzoo-llama --bin run_llama
  BIN="$PWD/target/release/run_llama"
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# The number after "tokens/s " in a line of lm_e2e.py.
rate() { sed -n 's/.*tokens\/s \([0-9.]*\).*/\1/p' <<<"$1" | head -1; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

echo "machine: $(lscpu | grep 'Model name' | sed 's/  */ /g'), $(nproc --all) cores, OMP_NUM_THREADS=$OMP_NUM_THREADS"
echo "torch: $("$py" -W ignore -c 'import torch, transformers; print(torch.__version__, "transformers", transformers.__version__)' 2>/dev/null)"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

for c in "${cases[@]}"; do
  case "$c" in
    # config, batch, seq, steps, skipped warm-up steps
    tiny) cfg=modelzoo/llama/configs/llama_tiny.yaml; batch=16; seq=64; steps=40; skip=5 ;;
    1b) cfg=modelzoo/llama/configs/llama_1.1b_single_card.yaml; batch=1; seq=256; steps=7; skip=2 ;;
  esac
  batch="${BATCH:-$batch}" seq="${SEQ:-$seq}" steps="${STEPS:-$steps}" skip="${SKIP:-$skip}"
  echo "== $c: batch $batch x seq $seq, $steps steps, first $skip excluded, ${AMP:-fp32}, recompute ${RECOMPUTE:-off}, $DEVICE"
  ours=() ref=()
  for round in $(seq "$ROUNDS"); do
    out="$tmp/$c-$round"
    # Precision comes from AMP alone (the configs' own mix_precision is switched off), and the
    # data is the built-in corpus on both sides.
    "$BIN" -c "$cfg" --step "$steps" --output_dir "$out" --seed 42 --device "$DEVICE" "${ours_amp[@]}" "${ours_rc[@]}" \
      -o Engine.mix_precision.use_pure_fp16=False \
      -o Data.batch_size.global_batch_size="$batch" -o Data.batch_size.local_batch_size="$batch" \
      -o Data.batch_size.micro_batch_size="$batch" -o Data.dataset.max_seq_len="$seq" \
      -o Data.dataset.input_dir= -o Model.attention_probs_dropout_prob=0 \
      -o Engine.logging_freq=1 -o Engine.eval_freq=1000000 -o Engine.eval_iters=1 \
      -o Engine.save_load.save_steps=1000000 >"$out.stdout" 2>"$out.stderr" \
      || { echo "run_llama failed:"; cat "$out.stderr"; exit 1; }
    a="$("$py" scripts/bench/lm_e2e.py log "$out/llama_log.json" --skip "$skip")"
    # The run's final checkpoint (13 GB for the 1B case) is not needed once its log is read.
    rm -rf "$out"
    echo "round $round A: $a  [load $(cut -d' ' -f1 /proc/loadavg)]"
    b="$("$py" -W ignore scripts/bench/lm_e2e.py run llama "$cfg" --batch "$batch" --seq "$seq" --steps "$steps" --skip "$skip" --device "$DEVICE" "${ref_amp[@]}" "${ref_rc[@]}")"
    echo "round $round B: $b  [load $(cut -d' ' -f1 /proc/loadavg)]"
    ours+=("$(rate "$a")") ref+=("$(rate "$b")")
  done
  mo="$(median "${ours[@]}")" mr="$(median "${ref[@]}")"
  echo "$c median tokens/s: run_llama $mo, pytorch $mr, ratio run_llama/pytorch $(awk -v a="$mo" -v b="$mr" 'BEGIN {printf "%.3f", a / b}')"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
