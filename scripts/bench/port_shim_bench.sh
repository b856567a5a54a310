#!/usr/bin/env bash
# The cost of modelzoo port's CPU baseline shim (python/port/sitecustomize.py): the same CUDA
# training script (scripts/bench/port_shim_workload.py: word_language_model-like Transformer
# and LSTM step loops, mnist's CNN) run directly on the CPU and under the shim
# (MODELZOO_PORT_CPU_BASELINE=1, PYTHONPATH=python/port, no GPU visible), alternating which side
# runs first each round so machine load hits both equally. Prints each round, the median ms per
# step of each side over the rounds, wall clock and process CPU time (one thread: the CPU time
# is the step's own cost even on a loaded machine), and the ratios shim / direct (target
# <= 1.2), with the CPU model and the load average before and after.
#
# Usage (repo root): scripts/bench/port_shim_bench.sh
#   ROUNDS=3 (rounds, at least 1; the median of N), STEPS=20 / WARMUP=3 (timed steps per model
#   per run, after the warm-up), THREADS=1 (OMP_NUM_THREADS for both sides: one thread keeps a
#   shared, loaded machine's spread small), MODELS=transformer,transformer_small,
#   transformer_eval,lstm,cnn (port_shim_workload.py says what each is), OLD_SHIM=DIR (a
#   directory with another sitecustomize.py, e.g. an earlier shim: measured as a third side),
#   PYTHON=.venv/bin/python.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS="${ROUNDS:-3}" STEPS="${STEPS:-20}" WARMUP="${WARMUP:-3}"
MODELS="${MODELS:-transformer,transformer_small,transformer_eval,lstm,cnn}" OLD_SHIM="${OLD_SHIM:-}"
py="${PYTHON:-.venv/bin/python}"
cores="$(nproc --all)"
export OMP_NUM_THREADS="${THREADS:-1}"
if (( ROUNDS < 1 )); then echo "error: ROUNDS=$ROUNDS; at least 1 round" >&2; exit 2; fi
if [[ ! -x $py ]]; then echo "error: no python at $py; run make build or set PYTHON" >&2; exit 2; fi
if [[ -n $OLD_SHIM && ! -f $OLD_SHIM/sitecustomize.py ]]; then
  echo "error: OLD_SHIM=$OLD_SHIM has no sitecustomize.py" >&2; exit 2
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

side() {  # side NAME ROUND: one run of the workload, its JSON line appended to $out/NAME
  local env=(env -u MODELZOO_PORT_CPU_BASELINE -u MODELZOO_PORT_BACKWARD_DIR -u PYTHONPATH)
  case "$1" in
    shim) env+=(MODELZOO_PORT_CPU_BASELINE=1 CUDA_VISIBLE_DEVICES= PYTHONPATH="$PWD/python/port") ;;
    old) env+=(MODELZOO_PORT_CPU_BASELINE=1 CUDA_VISIBLE_DEVICES= PYTHONPATH="$OLD_SHIM") ;;
  esac
  local line
  line="$("${env[@]}" "$py" -W ignore scripts/bench/port_shim_workload.py --steps "$STEPS" \
    --warmup "$WARMUP" --models "$MODELS" 2>/dev/null | tail -1)"
  echo "round $2 $1: $line"
  echo "$line" >>"$out/$1"
}

cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "cpu: $cpu ($cores cores), OMP_NUM_THREADS=$OMP_NUM_THREADS, torch $("$py" -c 'import torch; print(torch.__version__)')"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
sides=(direct shim); [[ -n $OLD_SHIM ]] && sides+=(old)
for r in $(seq 1 "$ROUNDS"); do
  if (( r % 2 )); then order=("${sides[@]}"); else order=(); for ((i=${#sides[@]}-1; i>=0; i--)); do order+=("${sides[$i]}"); done; fi
  for s in "${order[@]}"; do side "$s" "$r"; done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$py" - "$out" "$MODELS" "${sides[@]}" <<'PY'
import json, statistics, sys
out, models, sides = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]
runs = {s: [json.loads(l) for l in open(f"{out}/{s}")] for s in sides}
print("| model | direct ms/step (wall / CPU) | " + " | ".join(
    f"{s} ms/step (wall / CPU) | {s} / direct (wall / CPU)" for s in sides[1:]) + " |")
print("|---|---:|" + "---:|---:|" * (len(sides) - 1))
for m in models:
    med = {s: (statistics.median(r[m] for r in runs[s]),
               statistics.median(r[m + ".cpu"] for r in runs[s])) for s in sides}
    d = med["direct"]
    cells = " | ".join(f"{med[s][0]:.1f} / {med[s][1]:.1f} | {med[s][0] / d[0]:.3f}x / "
                       f"{med[s][1] / d[1]:.3f}x" for s in sides[1:])
    print(f"| {m} | {d[0]:.1f} / {d[1]:.1f} | {cells} |")
print(f"(median over {len(runs['direct'])} alternating rounds)")
PY
