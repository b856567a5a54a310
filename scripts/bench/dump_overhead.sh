#!/usr/bin/env bash
# Benchmark (not a test): what `--dump` (stats, op level) costs one training step of resnet50
# on the CPU — issue #15's target is at most 1.5x the step without it. Each round runs
# run_resnet twice, same binary and data, with and without `--dump DIR --dump_step 2` (order
# rotates), and reads step 2's seconds from the metric log (`--logging_freq 1`: train.ips of
# that step alone). Prints every run and the medians and their ratio.
#
#   scripts/bench/dump_overhead.sh [rounds=3] [batch=16] [image_size=224] [tensors=stats]
#
# Needs target/release/run_resnet (`cargo build --release -p modelzoo-resnet --bins`).
# Threads: OMP_NUM_THREADS if set, else every core. Measure on an otherwise idle machine.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rounds="${1:-3}" bs="${2:-16}" size="${3:-224}" tensors="${4:-stats}"
bin="$root/target/release/run_resnet"
py="$root/.venv/bin/python"
[[ -x "$bin" ]] || { echo "dump_overhead: $bin missing; cargo build --release -p modelzoo-resnet --bins" >&2; exit 1; }
threads="${OMP_NUM_THREADS:-$(nproc)}"

echo "machine: $(lscpu | grep 'Model name' | sed 's/ \+/ /g'), $(nproc) cores, threads $threads, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "case: resnet50 batch $bs, ${size}px, cpu fp32, step 2 of 3 timed, dump tensors=$tensors, $rounds rounds"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
results="$out/results.tsv"
cases=("plain:" "dump:--dump $out/dump --dump_step 2 --dump_tensors $tensors")
for ((r = 0; r < rounds; r++)); do
    for ((i = 0; i < 2; i++)); do
        c="${cases[$(((i + r) % 2))]}"
        name="${c%%:*}" flags="${c#*:}"
        rm -rf "$out/run" "$out/dump"
        # shellcheck disable=SC2086 # flags are words
        OMP_NUM_THREADS="$threads" RUST_LOG=warn "$bin" --model_name resnet50 --batch_size "$bs" \
            --image_size "$size" --step 3 --logging_freq 1 --num_workers 1 --memory_format nchw \
            --synthetic_samples $((bs * 4)) --output_dir "$out/run" $flags >/dev/null
        step=$("$py" - "$out/run/resnet50_log.json" "$bs" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    rec = json.loads(line.split(" ", 1)[1])
    if rec.get("type") == "LOG" and rec.get("step") == [0, 2] and "train.ips" in rec["data"]:
        print(f"{int(sys.argv[2]) / rec['data']['train.ips']:.3f}")
PY
)
        printf '%s\t%s\n' "$name" "$step" >>"$results"
        echo "round $((r + 1)): $name: $step s/step"
    done
done
"$py" - "$results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, s = line.split()
    runs.setdefault(name, []).append(float(s))
plain, dump = statistics.median(runs["plain"]), statistics.median(runs["dump"])
print("\n| case | s/step (median) | runs |\n|---|---|---|")
for name, v in runs.items():
    print(f"| {name} | {statistics.median(v):.3f} | {', '.join(f'{x:.3f}' for x in v)} |")
print(f"\ndump / plain: {dump / plain:.2f}x (target <= 1.5x)")
PY
