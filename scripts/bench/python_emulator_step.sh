#!/usr/bin/env bash
# Benchmark (not a test): what the SDAA emulator costs a ported *Python* training script against
# the same script on the CPU — the zoo's PyTorch model (modelzoo/pytorch/Classification/ResNet20,
# train.py, plain PyTorch + torch_sdaa) with `--device cpu` and with `--device sdaa` (the
# emulator's torch_sdaa), side by side in one run, alternating rounds (cpu, sdaa, cpu, ...).
# Prints each round's images/s (train.ips of the timed steps: steps after the warm-up, harmonic
# mean), each side's median and the ratio cpu / sdaa = how many times slower the emulated step
# is. NOT an SDAA hardware figure: every emulated op runs on this CPU.
#
#   scripts/bench/python_emulator_step.sh [rounds=3] [batch=64] [steps=30] [warmup=5] [extra train.py flags...]
#   e.g. scripts/bench/python_emulator_step.sh 3 64 30 5 --autocast
#
# Needs `make build` (.venv with torch, the emulator and its torch_sdaa). Threads:
# OMP_NUM_THREADS if set, else every core (both sides alike); the DataLoader runs in the
# training process (--num_workers 0) so only the step is compared.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rounds="${1:-3}" bs="${2:-64}" steps="${3:-30}" warmup="${4:-5}"
shift $(($# < 4 ? $# : 4))
extra=("$@")
py="$root/.venv/bin/python"
script="$root/modelzoo/pytorch/Classification/ResNet20/train.py"
(( rounds >= 3 )) || { echo "python_emulator_step: rounds=$rounds; a median needs at least 3" >&2; exit 2; }
(( warmup < steps )) || { echo "python_emulator_step: warmup must be below steps" >&2; exit 2; }
"$py" -c 'import torch_sdaa' >/dev/null 2>&1 ||
    { echo "python_emulator_step: $py cannot import torch_sdaa; run make build" >&2; exit 1; }
threads="${OMP_NUM_THREADS:-$(nproc)}"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, threads $threads, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "case: ResNet-20 train.py, batch $bs, $steps steps ($warmup warm-up), flags: ${extra[*]:-none}; $rounds alternating rounds"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
rate() { # log -> images/s of the steps after the warm-up (harmonic mean)
    "$py" - "$1" "$warmup" <<'PY'
import json, sys
path, skip = sys.argv[1], int(sys.argv[2])
ips = []
for line in open(path, encoding="utf-8"):
    brace = line.find("{")
    if brace < 0 or '"LOG"' not in line:
        continue
    data = json.loads(line[brace:]).get("data", {})
    if "train.ips" in data:
        ips.append(float(data["train.ips"]))
timed = ips[skip:]
print(f"{len(timed) / sum(1 / v for v in timed):.2f}")
PY
}
cpu=() sdaa=()
for ((r = 1; r <= rounds; r++)); do
    for device in cpu sdaa; do
        rm -rf "$out/$device"
        OMP_NUM_THREADS="$threads" TORCH_SDAA_BANNER=0 "$py" "$script" --device "$device" \
            --batch_size "$bs" --step "$steps" --num_workers 0 --output_dir "$out/$device" \
            "${extra[@]}" >"$out/$device.log" 2>&1 ||
            { echo "the $device run failed:"; tail -20 "$out/$device.log"; exit 1; }
        ips=$(rate "$out/$device/dllogger.json")
        if [[ $device == cpu ]]; then cpu+=("$ips"); else sdaa+=("$ips"); fi
        echo "round $r $device: $ips images/s  [load $(cut -d' ' -f1 /proc/loadavg)]"
    done
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
mc=$(median "${cpu[@]}") ms=$(median "${sdaa[@]}")
echo "median images/s: cpu $mc, emulated sdaa $ms"
awk -v c="$mc" -v s="$ms" 'BEGIN { printf "ratio cpu / emulated sdaa = %.3f (the emulated step is %.3fx the CPU step time)\n", c / s, c / s }'
