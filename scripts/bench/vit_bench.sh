#!/usr/bin/env bash
# Benchmark (not a test): training images/s of run_vit vs torchvision's ViT in PyTorch eager
# (scripts/bench/vit_reference.py) for the same model, batch, image size, precision, thread
# count and recipe (AdamW, weight decay on >1-D parameters, label smoothing 0.11, gradient
# clipping 1.0), timed after warm-up, side by side in one run: ROUNDS alternating rounds
# (run_vit, then PyTorch, then run_vit, ...) so machine load hits both alike; each side's
# median over the rounds, and their ratio.
#
#   scripts/bench/vit_bench.sh [model] [batch] [steps] [extra run_vit flags...]
#   e.g. scripts/bench/vit_bench.sh vit_b_16 8 5
#        scripts/bench/vit_bench.sh vit_b_16 64 10 --device cuda --autocast
#        IMAGE_SIZE=32 NUM_CLASSES=10 scripts/bench/vit_bench.sh vit_tiny 32 20   # smoke
# Environment: ROUNDS (3, at least 3), THREADS (nproc; OMP_NUM_THREADS and torch threads of
# both sides), IMAGE_SIZE (224), NUM_CLASSES (1000), WARMUP (2 untimed steps).
# --device and --autocast (the reference's --amp: bf16 on the CPU, fp16 elsewhere) apply to
# both sides; other flags go to run_vit only.
#
# Needs target/release/run_vit (cargo build --release -p modelzoo-vit) and .venv with torch
# and torchvision (scripts/setup.sh, python/requirements-reference.txt); RUN_VIT and PYTHON
# point elsewhere (scripts/gpu-check.sh on a GPU machine: carried binary, that machine's torch).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
model="${1:-vit_b_16}" bs="${2:-8}" steps="${3:-5}"
shift $(( $# < 3 ? $# : 3 ))
extra=("$@")
rounds="${ROUNDS:-3}" warmup="${WARMUP:-2}" threads="${THREADS:-$(nproc)}"
size="${IMAGE_SIZE:-224}" classes="${NUM_CLASSES:-1000}"
(( rounds >= 3 )) || { echo "vit_bench: ROUNDS=$rounds; a median needs at least 3" >&2; exit 2; }
py="${PYTHON:-$root/.venv/bin/python}"
bin="${RUN_VIT:-$root/target/release/run_vit}"
[[ -x "$bin" ]] || { echo "vit_bench: $bin missing; run cargo build --release -p modelzoo-vit" >&2; exit 1; }
"$py" -c 'import torchvision' 2>/dev/null \
    || { echo "vit_bench: $py has no torchvision; run scripts/setup.sh" >&2; exit 1; }
py_flags=()
for i in "${!extra[@]}"; do
    case "${extra[$i]}" in
        --autocast|--amp) py_flags+=(--amp) ;;
        --device) py_flags+=(--device "${extra[$((i + 1))]:?--device needs a value}") ;;
    esac
done

echo "machine: $(lscpu | grep 'Model name' | sed 's/ \+/ /g'), $(nproc) cores, threads $threads"
echo "case: $model batch $bs image $size classes $classes, $steps timed steps after $warmup warm-up, $rounds rounds, flags: ${extra[*]:-none}"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
ours=() refs=()
for r in $(seq "$rounds"); do
    # A: run_vit (train.ips of each logged step, the first $warmup dropped).
    OMP_NUM_THREADS="$threads" RUST_LOG=warn "$bin" --model_name "$model" --batch_size "$bs" \
        --image_size "$size" --num_classes "$classes" --step $((warmup + steps)) --logging_freq 1 \
        --num_workers 1 --synthetic_samples $((bs * (warmup + steps + 1))) \
        --output_dir "$out/r$r" "${extra[@]}" >"$out/r$r.stdout" 2>"$out/r$r.stderr" \
        || { echo "run_vit failed:" >&2; cat "$out/r$r.stderr" >&2; exit 1; }
    a=$("$py" "$root/scripts/bench/log_rate.py" "$out/r$r/${model}_log.json" --skip "$warmup")
    # B: PyTorch eager.
    b=$(OMP_NUM_THREADS="$threads" "$py" -W ignore "$root/scripts/bench/vit_reference.py" \
        --model "$model" --batch_size "$bs" --image_size "$size" --num_classes "$classes" \
        --warmup "$warmup" --steps "$steps" --threads "$threads" "${py_flags[@]}")
    echo "round $r run_vit:       $a  [load $(cut -d' ' -f1 /proc/loadavg)]"
    echo "round $r pytorch eager: $b  [load $(cut -d' ' -f1 /proc/loadavg)]"
    ours+=("$a") refs+=("$b")
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$py" - "${#ours[@]}" "${ours[@]}" "${refs[@]}" <<'PY'
import json, statistics, sys
n = int(sys.argv[1])
ours = [json.loads(s)["ips"] for s in sys.argv[2:2 + n]]
refs = [json.loads(s)["ips"] for s in sys.argv[2 + n:]]
o, r = statistics.median(ours), statistics.median(refs)
print(f"median of {n} rounds: run_vit {o:.2f} img/s, pytorch eager {r:.2f} img/s")
print(f"ratio run_vit / pytorch = {o / r:.3f}")
PY
