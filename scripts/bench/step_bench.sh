#!/usr/bin/env bash
# Benchmark (not a test): the training step of run_resnet and run_gpt against PyTorch eager on
# the same torch, side by side in one run — every combination of case x threads x precision x
# comparison, alternating rounds (run_<model> first in odd rounds, PyTorch first in even ones),
# the median ratio of each and the quartiles of the rounds' ratios.
#
#   scripts/bench/step_bench.sh [--device cuda] [case ...]
#       cases: resnet18 resnet50 gpt124m (the default) and gpt_tiny; --device (or DEVICE=) runs
#       both sides there (default cpu)
#   ROUNDS=3  THREADS="1 2"  PRECISIONS="fp32 bf16"  MODES="compute e2e"
#   REFERENCE_NHWC=1: the ResNet reference in channels-last too (run_resnet's CPU default),
#   to separate the layout's share of the lead from the rest
#
# The two comparisons (issue #17):
#   compute  one batch made once and kept in memory: run_<model> --fixed_batch, the reference's
#            --data fixed (scripts/bench/resnet_reference.py, scripts/bench/lm_e2e.py)
#   e2e      both read synthetic data through their pipelines and read the loss every step:
#            run_resnet's loader (--num_workers 1) vs a Dataset + DataLoader(num_workers=1);
#            run_gpt's token windows vs a DataLoader, both on the training thread
# ResNet: batch 16 at 224 px, SGD momentum 0.9, wd 1e-4, 2 warm-up + 5 timed steps. GPT: the
# FleetX config, batch 1 x seq 128 (124M) / 16 x 64 (tiny), AdamW, FleetX cosine, clip 1.0,
# dropout 0, 2 (5 for tiny) warm-up steps excluded. bf16 = autocast on both sides (ResNet on
# CUDA: fp16 autocast with loss scaling on both sides, as run_resnet and the reference do).
# Threads = OMP_NUM_THREADS for both. Prints one line per round, then a markdown table.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bench="$root/scripts/bench"
py="$root/.venv/bin/python"
pydir="$root/target/bench-py"
rounds="${ROUNDS:-3}" device="${DEVICE:-cpu}"
read -r -a thread_list <<<"${THREADS:-1 2}"
read -r -a precisions <<<"${PRECISIONS:-fp32 bf16}"
read -r -a modes <<<"${MODES:-compute e2e}"
cases=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --device) device="${2:?--device needs a value: cpu, cuda, cuda:N}"; shift 2 ;;
        *) cases+=("$1"); shift ;;
    esac
done
[[ ${#cases[@]} -gt 0 ]] || cases=(resnet18 resnet50 gpt124m)
for c in "${cases[@]}"; do
    case "$c" in resnet18 | resnet50 | resnet34 | resnet101 | resnet152 | gpt124m | gpt_tiny) ;;
        *) echo "step_bench: unknown case '$c'; use resnet18, resnet50, gpt124m or gpt_tiny" >&2; exit 2 ;;
    esac
done
for m in "${modes[@]}"; do
    [[ $m == compute || $m == e2e ]] || { echo "step_bench: MODES holds '$m'; use compute, e2e" >&2; exit 2; }
done
for p in "${precisions[@]}"; do
    [[ $p == fp32 || $p == bf16 ]] || { echo "step_bench: PRECISIONS holds '$p'; use fp32, bf16" >&2; exit 2; }
done
for b in run_resnet run_gpt; do
    [[ -x "$root/target/release/$b" ]] || { echo "step_bench: target/release/$b missing; run make build" >&2; exit 1; }
done
if [[ " ${cases[*]} " == *" resnet"* ]] && [[ ! -d "$pydir/torchvision" ]]; then
    "$py" -m pip install --disable-pip-version-check -q --no-deps --target "$pydir" torchvision==0.26.0 numpy pillow
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# One round of one combination: prints "OURS REF" (images/s or tokens/s). $5 says which side
# runs first: the rounds alternate it, so that neither side always runs first (on a shared VM
# the first of two back-to-back runs is not the same as the second).
round() {
    local case=$1 threads=$2 prec=$3 mode=$4 first=$5 out="$tmp/run"
    local ours ref ours_flags=() ref_flags=() bs warm steps cfg batch seq skip
    export OMP_NUM_THREADS="$threads" RUST_LOG=warn
    if [[ $case == resnet* ]]; then
        bs=16 warm=2 steps=5
        [[ $prec == bf16 ]] && { ours_flags+=(--autocast); ref_flags+=(--amp); }
        [[ $mode == compute ]] && { ours_flags+=(--fixed_batch); ref_flags+=(--data fixed); }
        [[ $mode == e2e ]] && ref_flags+=(--data loader --num_workers 1)
        [[ ${REFERENCE_NHWC:-0} == 1 ]] && ref_flags+=(--channels_last)
    else
        case $case in
            gpt124m) cfg=gpt_124m.yaml batch=1 seq=128 steps=7 skip=2 ;;
            gpt_tiny) cfg=gpt_tiny.yaml batch=16 seq=64 steps=40 skip=5 ;;
        esac
        cfg="$root/modelzoo/gpt/configs/$cfg"
        [[ $prec == bf16 ]] && { ours_flags+=(--autocast --amp_dtype bf16); ref_flags+=(--amp bf16); }
        [[ $mode == compute ]] && { ours_flags+=(--fixed_batch); ref_flags+=(--data fixed); }
    fi
    if [[ $first == ours ]]; then
        ours=$(side ours) && ref=$(side ref)
    else
        ref=$(side ref) && ours=$(side ours)
    fi
    echo "$ours $ref"
}

# One side of a round (ours or ref), run inside round(), whose locals say what to run.
side() {
    if [[ $case == resnet* && $1 == ours ]]; then
        rm -rf "$out"
        "$root/target/release/run_resnet" --model_name "$case" --batch_size $bs --step $((warm + steps)) \
            --logging_freq 1 --num_workers 1 --synthetic_samples $((bs * (warm + steps + 1))) \
            --device "$device" --output_dir "$out" "${ours_flags[@]}" >"$tmp/stdout" 2>"$tmp/stderr" \
            || { cat "$tmp/stderr" >&2; return 1; }
        "$py" "$bench/log_rate.py" "$out/${case}_log.json" --skip $warm | "$py" -c 'import json,sys; print(json.load(sys.stdin)["ips"])'
    elif [[ $case == resnet* ]]; then
        PYTHONPATH="$pydir" "$py" "$bench/resnet_reference.py" --model "$case" --batch_size $bs \
            --warmup $warm --steps $steps --threads "$threads" --device "$device" "${ref_flags[@]}" \
            | "$py" -c 'import json,sys; print(json.load(sys.stdin)["ips"])'
    elif [[ $1 == ours ]]; then
        rm -rf "$out"
        # Precision comes from PRECISIONS alone: gpt_124m.yaml's own use_pure_fp16 is switched off.
        "$root/target/release/run_gpt" -c "$cfg" --step $steps --output_dir "$out" --seed 42 \
            --device "$device" "${ours_flags[@]}" -o Engine.mix_precision.use_pure_fp16=False \
            -o Data.batch_size.global_batch_size=$batch -o Data.batch_size.local_batch_size=$batch \
            -o Data.batch_size.micro_batch_size=$batch -o Data.dataset.max_seq_len=$seq \
            -o Data.dataset.input_dir= -o Model.hidden_dropout_prob=0 \
            -o Model.attention_probs_dropout_prob=0 -o Engine.logging_freq=1 \
            -o Engine.eval_freq=1000000 -o Engine.eval_iters=1 \
            -o Engine.save_load.save_steps=1000000 >"$tmp/stdout" 2>"$tmp/stderr" \
            || { cat "$tmp/stderr" >&2; return 1; }
        "$py" "$bench/lm_e2e.py" log "$out/gpt_log.json" --skip $skip | awk '{print $3}'
    else
        "$py" -W ignore "$bench/lm_e2e.py" run gpt "$cfg" --batch $batch --seq $seq --steps $steps \
            --skip $skip --device "$device" "${ref_flags[@]}" | awk '{print $3}'
    fi
}

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -n1), $(nproc) cores; torch $("$py" -c 'import torch; print(torch.__version__)'); device $device"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
rows=()
for case in "${cases[@]}"; do
    for threads in "${thread_list[@]}"; do
        for prec in "${precisions[@]}"; do
            for mode in "${modes[@]}"; do
                ratios=() ours_all=() ref_all=()
                for r in $(seq "$rounds"); do
                    read -r ours ref < <(round "$case" "$threads" "$prec" "$mode" "$( ((r % 2)) && echo ours || echo ref)")
                    ratio=$("$py" -c 'import sys; print(f"{float(sys.argv[1]) / float(sys.argv[2]):.3f}")' "$ours" "$ref")
                    echo "$case threads $threads $prec $mode round $r: run_$([[ $case == gpt* ]] && echo gpt || echo resnet) $ours, pytorch $ref, ratio $ratio [load $(cut -d' ' -f1 /proc/loadavg)]"
                    ratios+=("$ratio") ours_all+=("$ours") ref_all+=("$ref")
                done
                rows+=("$("$py" - "$case" "$threads" "$prec" "$mode" "${ratios[*]}" "${ours_all[*]}" "${ref_all[*]}" <<'PY'
import statistics, sys
case, threads, prec, mode, ratios, ours, ref = sys.argv[1:]
med = lambda s: statistics.median(float(x) for x in s.split())
r = [float(x) for x in ratios.split()]
q = statistics.quantiles(r, n=4, method="inclusive") if len(r) > 1 else [r[0]] * 3
print(f"| {case} | {threads} | {prec} | {mode} | {med(ours):.2f} | {med(ref):.2f} | "
      f"{', '.join(ratios.split())} | {q[0]:.3f}–{q[2]:.3f} | **{med(ratios):.3f}** |")
PY
)")
            done
        done
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| case | threads | precision | comparison | run_<model> (median) | PyTorch (median) | ratio per round | ratio quartiles | median ratio |"
echo "|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
