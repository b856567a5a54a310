#!/usr/bin/env bash
# The pytorch/examples scripts the port's CPU baseline shim was checked on, run as they are
# (never edited, read from EXAMPLES) with tiny generated data (make_data.py): each under the
# shim (PYTHONPATH=python/port, MODELZOO_PORT_CPU_BASELINE=1, no GPU visible, with its accelerator
# flags) and, where the script has a CPU path, directly on the CPU (--no-accel / without
# --accel). Prints one row per run: example, side, exit status, seconds; each run's output is
# kept in WORK/logs/<example>.<side>.log.
#
# Usage (repo root): scripts/port-examples/run.sh [EXAMPLE...]
#   EXAMPLES=/work/ext/examples (a pytorch/examples checkout; checked on commit 77f55b9),
#   WORK=/tmp/port-examples (data and runs; make_data.py fills it when it has no data yet),
#   PYTHON=.venv/bin/python, TIMEOUT=900 (seconds per run), THREADS=1 (OMP_NUM_THREADS),
#   REPEAT=1 (runs of each example; with more, the sides alternate which goes first).
#   EXAMPLE: mnist vae dcgan imagenet wlm-transformer wlm-lstm ddp-tutorial ddp fsdp2 (default:
#   all).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO="$PWD"
EX="${EXAMPLES:-/work/ext/examples}" W="${WORK:-/tmp/port-examples}"
py="$REPO/${PYTHON:-.venv/bin/python}"; [[ ${PYTHON:-} = /* ]] && py="$PYTHON"
torchrun="$(dirname "$py")/torchrun"
TIMEOUT="${TIMEOUT:-900}"
export OMP_NUM_THREADS="${THREADS:-1}"
if [[ ! -f $EX/mnist/main.py ]]; then echo "error: EXAMPLES=$EX is not a pytorch/examples checkout" >&2; exit 2; fi
case "$REPO/" in "$W"/*|"$W/") echo "error: WORK=$W holds the repository" >&2; exit 2 ;; esac
case "$W/" in "$REPO"/*) echo "error: WORK=$W is inside the repository; use a directory outside it" >&2; exit 2 ;; esac
[[ -f $W/data/MNIST/raw/train-images-idx3-ubyte ]] || "$py" scripts/port-examples/make_data.py "$W" || exit 2
mkdir -p "$W/logs"

# run NAME SIDE DIR CMD...: runs CMD in DIR (under the shim when SIDE is shim), one table row.
run() {
  local name="$1" side="$2" dir="$3"; shift 3
  local env=(env -u MODELZOO_PORT_CPU_BASELINE -u MODELZOO_PORT_BACKWARD_DIR -u PYTHONPATH)
  [[ $side == shim ]] && env+=(MODELZOO_PORT_CPU_BASELINE=1 CUDA_VISIBLE_DEVICES= PYTHONPATH="$REPO/python/port")
  mkdir -p "$dir"
  local log="$W/logs/$name.$side.log" start end rc
  start=$(date +%s%N)
  (cd "$dir" && timeout "$TIMEOUT" "${env[@]}" "$@") >"$log" 2>&1
  rc=$?
  end=$(date +%s%N)
  local ds=$(( (end - start) / 100000000 ))
  printf '| %s | %s | %s | %d.%d |\n' "$name" "$side" "$rc" $((ds / 10)) $((ds % 10))
}

port() { echo $(( 29500 + RANDOM % 2000 )); }

# pair NAME DIR -- SHIM_CMD... -- CPU_CMD...: both sides, in the round's order.
pair() {
  local name="$1" dir="$2"; shift 3
  local shim_cmd=() cpu_cmd=()
  while [[ $1 != -- ]]; do shim_cmd+=("$1"); shift; done; shift
  cpu_cmd=("$@")
  if [[ $FIRST == shim ]]; then
    run "$name" shim "$dir" "${shim_cmd[@]}"; run "$name" cpu "$dir" "${cpu_cmd[@]}"
  else
    run "$name" cpu "$dir" "${cpu_cmd[@]}"; run "$name" shim "$dir" "${shim_cmd[@]}"
  fi
}

one() {
  case "$1" in
    mnist)
      pair mnist "$W/run-mnist" -- "$py" "$EX/mnist/main.py" --epochs 1 --test-batch-size 100 \
        -- "$py" "$EX/mnist/main.py" --epochs 1 --test-batch-size 100 --no-accel ;;
    vae)
      mkdir -p "$W/run-vae/results"
      pair vae "$W/run-vae" -- "$py" "$EX/vae/main.py" --epochs 1 -- "$py" "$EX/vae/main.py" --epochs 1 --no-accel ;;
    dcgan)
      local args=(--dataset fake --dry-run --batchSize 16 --outf "$W/run-dcgan" --manualSeed 1)
      pair dcgan "$W/run-dcgan" -- "$py" "$EX/dcgan/main.py" "${args[@]}" --accel -- "$py" "$EX/dcgan/main.py" "${args[@]}" ;;
    imagenet)
      local args=(-a resnet18 -j 2 -b 8 --epochs 1 --seed 1)
      pair imagenet "$W/run-imagenet" -- "$py" "$EX/imagenet/main.py" "${args[@]}" "$W/imagenet" \
        -- "$py" "$EX/imagenet/main.py" "${args[@]}" --no-accel "$W/imagenet" ;;
    wlm-transformer|wlm-lstm)
      local model=Transformer; [[ $1 == wlm-lstm ]] && model=LSTM
      local args=(--data "$W/data/wikitext-2" --epochs 1 --model "$model" --log-interval 5 --save "$W/run-$1/model.pt")
      [[ $model == LSTM ]] || args+=(--lr 5)
      pair "$1" "$W/run-$1" -- "$py" "$EX/word_language_model/main.py" "${args[@]}" --accel \
        -- "$py" "$EX/word_language_model/main.py" "${args[@]}" ;;
    ddp-tutorial)
      # NCCL and CUDA devices are hard-wired: no CPU path of its own.
      rm -f "$W/run-ddp-tutorial/snapshot.pt"
      run ddp-tutorial shim "$W/run-ddp-tutorial" "$torchrun" --nproc_per_node 2 --master_port "$(port)" \
        "$EX/distributed/ddp-tutorial-series/multigpu_torchrun.py" 2 1 --batch_size 32 ;;
    ddp)
      # Exits without running when there are fewer than 2 GPUs: no CPU path of its own.
      run ddp shim "$W/run-ddp" "$torchrun" --nproc_per_node 2 --rdzv_endpoint "localhost:$(port)" "$EX/distributed/ddp/example.py" ;;
    fsdp2)
      # Exits without running when there are fewer than 2 GPUs: no CPU path of its own. A fresh
      # start each time (it resumes from its checkpoints otherwise); then the mixed-precision run.
      rm -rf "$W/run-fsdp2/checkpoints"
      run fsdp2 shim "$W/run-fsdp2" "$torchrun" --nproc_per_node 2 --master_port "$(port)" "$EX/distributed/FSDP2/example.py"
      rm -rf "$W/run-fsdp2-mp/checkpoints"
      run fsdp2-mixed-precision shim "$W/run-fsdp2-mp" "$torchrun" --nproc_per_node 2 --master_port "$(port)" "$EX/distributed/FSDP2/example.py" --mixed-precision ;;
    *) echo "error: unknown example '$1'" >&2; exit 2 ;;
  esac
}

echo "| example | side | exit | seconds |"
echo "|---|---|---:|---:|"
list=("$@"); [[ ${#list[@]} -eq 0 ]] && list=(mnist vae dcgan imagenet wlm-transformer wlm-lstm ddp-tutorial ddp fsdp2)
REPEAT="${REPEAT:-1}"
for r in $(seq 1 "$REPEAT"); do
  if (( r % 2 )); then FIRST=shim; else FIRST=cpu; fi
  for e in "${list[@]}"; do one "$e"; done
done
echo "(logs in $W/logs; load average now $(cut -d' ' -f1-3 /proc/loadavg))"
