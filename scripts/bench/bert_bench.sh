#!/usr/bin/env bash
# BERT pretraining throughput, side by side in one run: the run_bert binary itself (engine,
# LAMB, polynomial warm-up/decay, global-norm clip, masked-LM + next-sentence batches of the
# built-in corpus) against transformers' BertForPreTraining trained the same way in PyTorch
# eager (scripts/bench/bert_eager.py: same torch, same shape and vocabulary, sdpa, dropout
# 0.1, LAMB with apex FusedLAMB's semantics, batch/seq, thread count, precision), alternating
# run_bert / PyTorch rounds (A/B/A/B...) so machine load hits both equally. Prints each round,
# the median tokens/s of each side and the ratio run_bert / PyTorch.
#
# Usage (repo root): scripts/bench/bert_bench.sh [tiny] [base] [large]
#   ROUNDS=3 (A/B pairs per case, at least 1; the median of N), THREADS=2 (OMP_NUM_THREADS for
#   both sides), DEVICE=cpu (or cuda), AMP= (or bf16: autocast on both sides),
#   VOCAB=30522 (rows of the word embedding and the tied decoder, bert-base-uncased's),
#   STEPS / SKIP / BATCH / SEQ override the case's sizes (smoke runs); RUN_BERT (a built
#   run_bert: no cargo build) and PYTHON (one with torch and transformers) for
#   scripts/gpu-check.sh on a GPU machine.
# A round's tokens/s = total tokens / total time over the steps after the first SKIP: for
# run_bert from train.ips of its own JSON log (--logging_freq 1, read by lm_e2e.py log), for
# PyTorch timed the same way around each step.
set -euo pipefail
cd "$(dirname "$0")/../.."
export LIBTORCH_USE_PYTORCH=1 PATH="$PWD/.venv/bin:$PATH"
export OMP_NUM_THREADS="${THREADS:-2}" RUST_LOG=warn
ROUNDS="${ROUNDS:-3}" DEVICE="${DEVICE:-cpu}" AMP="${AMP:-}" VOCAB="${VOCAB:-30522}"
if (( ROUNDS < 1 )); then echo "error: ROUNDS=$ROUNDS; at least 1 round" >&2; exit 2; fi
case "$AMP" in ""|bf16) ;; *) echo "error: AMP=$AMP; use bf16 or leave it empty (fp32)" >&2; exit 2 ;; esac
ours_amp=() ref_amp=()
if [[ -n $AMP ]]; then ours_amp=(--autocast --amp_dtype "$AMP"); ref_amp=(--amp "$AMP"); fi
cases=("$@"); [ ${#cases[@]} -eq 0 ] && cases=(tiny)
for c in "${cases[@]}"; do
  case "$c" in tiny|base|large) ;; *) echo "error: unknown case '$c'; use tiny, base or large" >&2; exit 2 ;; esac
done

py="${PYTHON:-python}"
if [[ -n ${RUN_BERT:-} ]]; then
  BIN="$RUN_BERT"
else
  cargo build -q --release -p modelzoo-bert --bin run_bert
  BIN="$PWD/target/release/run_bert"
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# The number after "tokens/s " in a line of lm_e2e.py / bert_eager.py.
rate() { sed -n 's/.*tokens\/s \([0-9.]*\).*/\1/p' <<<"$1" | head -1; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

echo "machine: $(lscpu | grep 'Model name' | sed 's/  */ /g'), $(nproc --all) cores, OMP_NUM_THREADS=$OMP_NUM_THREADS"
echo "torch: $("$py" -W ignore -c 'import torch, transformers; print(torch.__version__, "transformers", transformers.__version__)' 2>/dev/null)"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

for c in "${cases[@]}"; do
  case "$c" in
    # model, batch, seq, steps, skipped warm-up steps
    tiny) model=bert_tiny; batch=32; seq=128; steps=40; skip=5 ;;
    base) model=bert_base; batch=8; seq=128; steps=10; skip=2 ;;
    large) model=bert_large; batch=4; seq=128; steps=6; skip=2 ;;
  esac
  batch="${BATCH:-$batch}" seq="${SEQ:-$seq}" steps="${STEPS:-$steps}" skip="${SKIP:-$skip}"
  echo "== $c ($model, vocab $VOCAB): batch $batch x seq $seq, $steps steps, first $skip excluded, ${AMP:-fp32}, $DEVICE"
  ours=() ref=()
  for round in $(seq "$ROUNDS"); do
    out="$tmp/$c-$round"
    "$BIN" --model_name "$model" --task pretrain --vocab_size "$VOCAB" --batch_size "$batch" \
      --max_seq_length "$seq" --step "$steps" --lr 0.001 --seed 42 --device "$DEVICE" "${ours_amp[@]}" \
      --logging_freq 1 -o Engine.eval_freq=1000000 -o Engine.eval_iters=1 \
      -o Engine.save_load.save_steps=1000000 --output_dir "$out" >"$out.stdout" 2>"$out.stderr" \
      || { echo "run_bert failed:"; cat "$out.stderr"; exit 1; }
    a="$("$py" scripts/bench/lm_e2e.py log "$out/${model}_log.json" --skip "$skip")"
    rm -rf "$out"
    echo "round $round A: $a  [load $(cut -d' ' -f1 /proc/loadavg)]"
    b="$("$py" -W ignore scripts/bench/bert_eager.py --model "$model" --vocab "$VOCAB" --batch "$batch" --seq "$seq" --steps "$steps" --skip "$skip" --device "$DEVICE" "${ref_amp[@]}")"
    echo "round $round B: $b  [load $(cut -d' ' -f1 /proc/loadavg)]"
    ours+=("$(rate "$a")") ref+=("$(rate "$b")")
  done
  mo="$(median "${ours[@]}")" mr="$(median "${ref[@]}")"
  echo "$c median tokens/s: run_bert $mo, pytorch $mr, ratio run_bert/pytorch $(awk -v a="$mo" -v b="$mr" 'BEGIN {printf "%.3f", a / b}')"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
