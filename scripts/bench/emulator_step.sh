#!/usr/bin/env bash
# Benchmark (not a test): what the SDAA emulator costs against the CPU for the design card's
# command, `run_resnet --batch_size 64 --device sdaa --autocast` (resnet50, 224 px), side by
# side in one run, same binary: the CPU fp32 step, the emulated fp32 step and the emulated AMP
# step (fp16 autocast), in rounds whose order rotates. Prints each run's seconds per step
# (first step excluded as warm-up) and the medians and ratios to the CPU fp32 step.
# NOT an SDAA hardware figure: every emulated op runs on this CPU.
#
#   scripts/bench/emulator_step.sh [rounds=3] [batch=64] [image_size=224] [timed_steps=2]
#
# Needs `make build` (target/release/run_resnet and the emulator in target/sdaa-emulator).
# Threads: OMP_NUM_THREADS if set, else every core.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rounds="${1:-3}" bs="${2:-64}" size="${3:-224}" steps="${4:-2}"
bin="$root/target/release/run_resnet"
py="$root/.venv/bin/python"
[[ -x "$bin" ]] || { echo "emulator_step: $bin missing; run make build" >&2; exit 1; }
[[ -f "$root/target/sdaa-emulator/lib64/libtorch_sdaa.so" ]] ||
    { echo "emulator_step: the SDAA emulator is not built; run make build" >&2; exit 1; }
threads="${OMP_NUM_THREADS:-$(nproc)}"
cases=("cpu fp32:--device cpu --memory_format nchw" "emulated sdaa fp32:--device sdaa" "emulated sdaa AMP (fp16):--device sdaa --autocast")

echo "machine: $(lscpu | grep 'Model name' | sed 's/ \+/ /g'), $(nproc) cores, threads $threads, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "case: resnet50 batch $bs, ${size}px, $steps timed steps after 1 warm-up, $rounds rounds (order rotates)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
results="$out/results.tsv"
for ((r = 0; r < rounds; r++)); do
    for ((i = 0; i < ${#cases[@]}; i++)); do
        c="${cases[$(((i + r) % ${#cases[@]}))]}"
        name="${c%%:*}" flags="${c#*:}"
        run="$out/run"
        rm -rf "$run"
        # shellcheck disable=SC2086 # flags are words
        OMP_NUM_THREADS="$threads" SDAA_HOME="$root/target/sdaa-emulator" RUST_LOG=warn "$bin" \
            --model_name resnet50 --batch_size "$bs" --image_size "$size" --step $((steps + 1)) \
            --logging_freq 1 --num_workers 1 --synthetic_samples $((bs * (steps + 2))) \
            --output_dir "$run" $flags >/dev/null
        ips=$("$py" "$root/scripts/bench/log_rate.py" "$run/resnet50_log.json" --skip 1 |
            "$py" -c 'import json,sys; print(json.load(sys.stdin)["ips"])')
        step=$("$py" -c "print(f'{$bs / $ips:.2f}')")
        printf '%s\t%s\n' "$name" "$step" >>"$results"
        echo "round $((r + 1)): $name: $step s/step"
    done
done
"$py" - "$results" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
runs = {}
for name, s in rows:
    runs.setdefault(name, []).append(float(s))
base = statistics.median(runs["cpu fp32"])
print("\n| case | s/step (median) | runs | vs cpu fp32 |\n|---|---|---|---|")
for name, v in runs.items():
    m = statistics.median(v)
    print(f"| {name} | {m:.2f} | {', '.join(f'{x:.2f}' for x in v)} | {m / base:.2f}x |")
PY
