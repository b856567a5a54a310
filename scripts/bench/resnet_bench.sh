#!/usr/bin/env bash
# Benchmark (not a test): training images/s of run_resnet vs PyTorch eager (torchvision) for the
# same model, batch, precision and thread count, on synthetic data, timed after warm-up, side by
# side in one run.
#
#   scripts/bench/resnet_bench.sh [model] [batch] [steps] [extra run_resnet flags...]
#   e.g. scripts/bench/resnet_bench.sh resnet50 16 5
#        scripts/bench/resnet_bench.sh resnet50 64 10 --device cuda --autocast
# --device, --autocast (the reference's --amp) and --channels_last apply to both sides.
#
# Needs target/release/run_resnet (make build). Installs torchvision==0.26.0 (the release that
# matches torch 2.11.0), numpy and pillow without dependencies into target/bench-py/, so .venv
# is not touched.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
model="${1:-resnet50}" bs="${2:-16}" steps="${3:-5}"
shift $(( $# < 3 ? $# : 3 ))
extra=("$@")
warmup=2
threads="${THREADS:-$(nproc)}"
py="$root/.venv/bin/python"
pydir="$root/target/bench-py"
bin="$root/target/release/run_resnet"
[[ -x "$bin" ]] || { echo "resnet_bench: $bin missing; run make build" >&2; exit 1; }
if [[ ! -d "$pydir/torchvision" || ! -d "$pydir/numpy" || ! -d "$pydir/PIL" ]]; then
    "$py" -m pip install --disable-pip-version-check -q --no-deps --target "$pydir" torchvision==0.26.0 numpy pillow
fi
py_flags=()
for i in "${!extra[@]}"; do
    case "${extra[$i]}" in
        --channels_last) py_flags+=(--channels_last) ;;
        --autocast) py_flags+=(--amp) ;;
        --device) py_flags+=(--device "${extra[$((i + 1))]:?--device needs a value}") ;;
    esac
done

echo "machine: $(lscpu | grep 'Model name' | sed 's/ \+/ /g'), $(nproc) cores, threads $threads"
echo "case: $model batch $bs, $steps timed steps after $warmup warm-up, flags: ${extra[*]:-none}"

ref=$(OMP_NUM_THREADS="$threads" PYTHONPATH="$pydir" "$py" "$root/scripts/bench/resnet_reference.py" \
    --model "$model" --batch_size "$bs" --warmup "$warmup" --steps "$steps" --threads "$threads" "${py_flags[@]}")
echo "pytorch eager: $ref"

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
OMP_NUM_THREADS="$threads" RUST_LOG=warn "$bin" --model_name "$model" --batch_size "$bs" \
    --step $((warmup + steps)) --logging_freq 1 --num_workers 1 --synthetic_samples $((bs * (warmup + steps + 1))) \
    --output_dir "$out" "${extra[@]}" >/dev/null
ours=$("$py" "$root/scripts/bench/log_rate.py" "$out/${model}_log.json" --skip "$warmup")
echo "run_resnet:    $ours"
"$py" - "$ref" "$ours" <<'PY'
import json, sys
r, o = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"ratio run_resnet / pytorch = {o['ips'] / r['ips']:.3f}  ({o['ips']:.2f} vs {r['ips']:.2f} img/s)")
PY
