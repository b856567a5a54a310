#!/usr/bin/env bash
# Benchmark (not a test): data-parallel scaling on the CPU, 1 worker x 1 thread vs 2 workers x
# 1 thread, ResNet-18 on synthetic data — run_resnet (c10d Gloo + Reducer through our shim)
# side by side with PyTorch DDP (Gloo, torchrun) on the same model, batch per worker, image
# size, optimizer and thread count. Rounds alternate so machine load hits both alike. PyTorch
# runs twice at 2 workers: DDP's defaults, and with gradient_as_bucket_view=True as run_resnet's
# reducer has it. Medians of the rounds close the table.
#
#   scripts/bench/ddp_bench.sh [batch_per_worker] [image_size] [rounds]   (defaults 16 64 2)
#
# Needs target/release/run_resnet (make build); installs torchvision into target/bench-py/
# as scripts/bench/step_bench.sh does.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bs="${1:-16}" size="${2:-64}" rounds="${3:-2}"
warmup=5 steps=20
py="$root/.venv/bin/python"
pydir="$root/target/bench-py"
bin="$root/target/release/run_resnet"
[[ -x "$bin" ]] || { echo "ddp_bench: $bin missing; run make build" >&2; exit 1; }
if [[ ! -d "$pydir/torchvision" || ! -d "$pydir/numpy" || ! -d "$pydir/PIL" ]]; then
    "$py" -m pip install --disable-pip-version-check -q --no-deps --target "$pydir" torchvision==0.26.0 numpy pillow
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1 RUST_LOG=warn

# A side that fails stops the benchmark with its own output (never a table with a row
# missing and exit 0).
fail() { # what, log file
    echo "ddp_bench: $1 failed; its output:" >&2
    tail -n 30 "$2" >&2
    exit 1
}

# run_resnet: the job's train.ips averaged over the logging windows after the warm-up one.
ours() {
    local n="$1" out="$work/ours$1"
    rm -rf "$out"
    "$bin" --model_name resnet18 --num_classes 1000 --image_size "$size" --batch_size "$bs" \
        --synthetic_samples $(( bs * n * (warmup + steps) )) --num_workers 0 \
        --step $(( warmup + steps )) --logging_freq "$warmup" --nproc_per_node "$n" \
        --master_port $(( 29700 + n )) --output_dir "$out" > "$work/ours$n.log" 2>&1 \
        || fail "run_resnet with $n worker(s)" "$work/ours$n.log"
    "$py" - "$out/resnet18_log.json" <<'PY'
import json, sys
ips = [json.loads(l.split("TCAPPDLL ", 1)[1])["data"]["train.ips"]
       for l in open(sys.argv[1]) if '"train.ips"' in l and '"data"' in l]
print(round(sum(ips[1:]) / len(ips[1:]), 2))
PY
}
theirs() { # workers [extra reference flags]
    local n="$1" log="$work/theirs$1.log"
    local args=(--batch_size "$bs" --image_size "$size" --warmup "$warmup" --steps "$steps" "${@:2}")
    if (( n == 1 )); then
        PYTHONPATH="$pydir" "$py" "$root/scripts/bench/ddp_reference.py" "${args[@]}" >"$log" 2>&1 \
            || fail "the PyTorch reference with 1 worker" "$log"
    else
        PYTHONPATH="$pydir" "$root/.venv/bin/torchrun" --nproc_per_node "$n" --master_port 29710 \
            "$root/scripts/bench/ddp_reference.py" "${args[@]}" >"$log" 2>&1 \
            || fail "the PyTorch reference (torchrun) with $n workers" "$log"
    fi
    grep '^{' "$log" | tail -n 1 | "$py" -c 'import json,sys; print(json.loads(sys.stdin.read())["ips"])' \
        || fail "reading the PyTorch reference's result ($n workers)" "$log"
}

echo "machine: $(lscpu | grep 'Model name' | sed 's/ \+/ /g'), $(nproc --all) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "case: resnet18, batch $bs per worker, ${size}x${size}, 1 thread per worker, $steps timed steps after $warmup"
printf "%-6s %-18s %12s %12s\n" round impl "1w imgs/s" "2w imgs/s"
# One table row: round, impl, 1-worker and 2-worker images/s, and the efficiency.
row() { printf "%-6s %-18s %12s %12s   efficiency %s\n" "$1" "$2" "$3" "$4" "$("$py" -c "print(f'{$4/(2*$3):.2f}')")"; }
declare -A all
for r in $(seq 1 "$rounds"); do
    # `|| exit`: a failed side has already said why (command substitutions do not stop a script).
    o1=$(ours 1) || exit 1
    o2=$(ours 2) || exit 1
    t1=$(theirs 1) || exit 1
    t2=$(theirs 2) || exit 1
    # PyTorch with the bucket views run_resnet's reducer uses (one worker has no DDP).
    v2=$(theirs 2 --gradient_as_bucket_view) || exit 1
    row "$r" run_resnet "$o1" "$o2"
    row "$r" pytorch-ddp "$t1" "$t2"
    row "$r" pytorch-ddp-views "$t1" "$v2"
    all[o1]+="$o1 " all[o2]+="$o2 " all[t1]+="$t1 " all[t2]+="$t2 " all[v2]+="$v2 "
done
median() { "$py" -c "import statistics,sys; print(statistics.median(map(float, sys.argv[1:])))" ${all[$1]}; }
row median run_resnet "$(median o1)" "$(median o2)"
row median pytorch-ddp "$(median t1)" "$(median t2)"
row median pytorch-ddp-views "$(median t1)" "$(median v2)"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
