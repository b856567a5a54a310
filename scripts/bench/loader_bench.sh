#!/usr/bin/env bash
# Benchmark (not a test), issue #26: run_resnet's image loader against torchvision's on a folder
# of real JPEG files, side by side, alternating rounds, medians.
#
#   scripts/bench/loader_bench.sh [--files N] [--workers "1 2"] [--rounds R] [--batches B]
#                                 [--no-e2e] [--device cpu|cuda[:N]]
#
#   --files N      training JPEGs in the folder (default 2000; validation gets N/4), made once
#                  by scripts/bench/loader_images.py into target/loader-bench/ (never committed):
#                  ImageNet-like sizes around 500x375, quality 85-95, natural-looking content
#   --workers      the loader worker counts k to compare (default "1 2")
#   --rounds R     alternating rounds per case, medians reported (default 3; ROUNDS= too)
#   --batches B    timed batches of 64 per loader round, after one warm-up batch (default 10)
#   --no-e2e       skip the ResNet-50 end-to-end part (E2E=0 too)
#   --device       run both end-to-end sides there (default cpu); the loader part runs on the CPU
#
# Per split (train: RandomResizedCrop(224) + flip; val: Resize(256) + CenterCrop(224); both then
# normalised) and k, three columns, images/s per worker (the k workers' images/s divided by k):
#   run_resnet   its Loader over ImageFolder (scripts' helper: modelzoo/vision/examples/
#                loader_bench.rs), batches of 64 as run_resnet builds them on the CPU: fp32,
#                normalised by the loader threads into channels-last memory
#   torchvision  ImageFolder + the same transforms + ToTensor + Normalize through
#                DataLoader(batch_size=64, num_workers=k) (scripts/bench/loader_reference.py)
#   decode-only  reading and decoding the same files with libjpeg-turbo (TurboJPEG, full size,
#                RGB) on k threads: the limit column
# and prints, besides the tables, one line per case for scripts to read:
#   loader train k=1: run_resnet 512.3 torchvision 230.1 decode-only 601.0 ratio 2.23
# (ratio = run_resnet / torchvision). Then where one sample's time goes, stage by stage (before
# issue #26, after, and torchvision's), and ResNet-50 end to end on the folder: run_resnet
# --dataset_path against loader_reference.py train (torchvision's resnet50, SGD as
# resnet_reference.py, the train transforms through DataLoader(num_workers=k)), batch E2E_BATCH
# (default 32), E2E_WARMUP (2) untimed and E2E_STEPS (5) timed steps, THREADS (nproc) intra-op
# threads on both sides, one line per k: `e2e resnet50 k=1: run_resnet 7.1 pytorch 6.0 ratio 1.18`.
# REFERENCE_NHWC=1 runs the PyTorch side channels-last (run_resnet's CPU default).
#
# Needs the venv (make setup: torch, torchvision) and builds what it runs
# (cargo build --release -p modelzoo-vision --example loader_bench -p modelzoo-resnet);
# SKIP_BUILD=1 uses what is in target/release.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bench="$root/scripts/bench"
py="$root/.venv/bin/python"
files=2000 workers="1 2" rounds="${ROUNDS:-3}" batches=10 e2e="${E2E:-1}" device=cpu
while [[ $# -gt 0 ]]; do
    case "$1" in
        --files) files="${2:?--files needs a number}"; shift 2 ;;
        --workers) workers="${2:?--workers needs a list, e.g. \"1 2\"}"; shift 2 ;;
        --rounds) rounds="${2:?--rounds needs a number}"; shift 2 ;;
        --batches) batches="${2:?--batches needs a number}"; shift 2 ;;
        --no-e2e) e2e=0; shift ;;
        --device) device="${2:?--device needs a value: cpu, cuda, cuda:N}"; shift 2 ;;
        -h | --help) sed -n '2,40p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) echo "loader_bench: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
for n in "$files" "$rounds" "$batches"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "loader_bench: '$n' is not a positive number" >&2; exit 2; }
done
read -r -a ks <<<"$workers"
for k in "${ks[@]}"; do
    [[ $k =~ ^[1-9][0-9]*$ ]] || { echo "loader_bench: --workers holds '$k'; use counts >= 1" >&2; exit 2; }
done
((files >= 512)) || { echo "loader_bench: --files $files: need at least 512 (validation gets a quarter: two batches of 64)" >&2; exit 2; }
[[ -x $py ]] || { echo "loader_bench: $py missing; run make setup" >&2; exit 1; }
"$py" -c 'import torchvision, PIL' 2>/dev/null \
    || { echo "loader_bench: $py has no torchvision / PIL; run make setup" >&2; exit 1; }
threads="${THREADS:-$(nproc)}" batch=64
e2e_batch="${E2E_BATCH:-32}" e2e_warm="${E2E_WARMUP:-2}" e2e_steps="${E2E_STEPS:-5}"

lb="$root/target/release/examples/loader_bench" rr="$root/target/release/run_resnet"
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
    echo "building loader_bench and run_resnet (cargo build --release) ..."
    (cd "$root" && LIBTORCH_USE_PYTORCH=1 PATH="$root/.venv/bin:$PATH" cargo build --release -q \
        -p modelzoo-vision --example loader_bench -p modelzoo-resnet --bin run_resnet) \
        || { echo "loader_bench: the build failed (see above)" >&2; exit 1; }
fi
for b in "$lb" "$rr"; do
    [[ -x $b ]] || { echo "loader_bench: $b missing; build it (see --help)" >&2; exit 1; }
done

data="$root/target/loader-bench/imagenet-like-$files"
echo "data: $data (made once by loader_images.py)"
"$py" "$bench/loader_images.py" "$data" --files "$files" >/dev/null \
    || { echo "loader_bench: could not make the JPEG folder $data" >&2; exit 1; }
info=$(cat "$data/READY")
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

ips() { "$py" -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["ips"])'; }
med() { "$py" -c 'import statistics,sys; print(f"{statistics.median(float(x) for x in sys.argv[1:]):.1f}")' "$@"; }
div() { "$py" -c 'import sys; print(f"{float(sys.argv[1]) / float(sys.argv[2]):.2f}")' "$1" "$2"; }

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -n1), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; torch $("$py" -c 'import torch; print(torch.__version__)'), torchvision $("$py" -c 'import torchvision; print(torchvision.__version__)'), PIL $("$py" -c 'import PIL; print(PIL.__version__)'); libturbojpeg $(pkg-config --modversion libturbojpeg 2>/dev/null || echo '?')"
echo "folder: $info"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

lines=() rows=()
for split in train val; do
    for k in "${ks[@]}"; do
        ours=() tv=() dec=()
        for r in $(seq "$rounds"); do
            o=$("$lb" loader --data "$data" --split "$split" --workers "$k" --batches "$batches" --batch $batch | ips) \
                || { echo "loader_bench: run_resnet's loader failed ($split, k=$k)" >&2; exit 1; }
            t=$("$py" "$bench/loader_reference.py" loader --data "$data" --split "$split" --workers "$k" \
                --batches "$batches" --batch $batch | ips) \
                || { echo "loader_bench: torchvision's DataLoader failed ($split, k=$k)" >&2; exit 1; }
            d=$("$lb" decode --data "$data" --split "$split" --workers "$k" --images $((batches * batch)) | ips) \
                || { echo "loader_bench: the decode-only pass failed ($split, k=$k)" >&2; exit 1; }
            echo "$split k=$k round $r: run_resnet $o torchvision $t decode-only $d images/s (all workers) [load $(cut -d' ' -f1 /proc/loadavg)]"
            ours+=("$(div "$o" "$k")") tv+=("$(div "$t" "$k")") dec+=("$(div "$d" "$k")")
        done
        mo=$(med "${ours[@]}") mt=$(med "${tv[@]}") md=$(med "${dec[@]}")
        lines+=("loader $split k=$k: run_resnet $mo torchvision $mt decode-only $md ratio $(div "$mo" "$mt")")
        rows+=("| $split | $k | $mo (${ours[*]}) | $mt (${tv[*]}) | $md (${dec[*]}) | **$(div "$mo" "$mt")** | $(div "$md" "$mo") |")
    done
done
echo
echo "Images/s per worker, medians of $rounds alternating rounds ($batches timed batches of $batch after one):"
echo
echo "| split | k | run_resnet (rounds) | torchvision (rounds) | decode-only (rounds) | run_resnet / torchvision | decode-only / run_resnet |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
printf '%s\n' "${lines[@]}"

echo
echo "Where one sample's time goes (one thread, 256 train / 128 val images, µs per sample):"
for split in train val; do
    n=$([[ $split == train ]] && echo 256 || echo 128)
    echo
    "$lb" profile --data "$data" --split "$split" --images "$n" --batch $batch | grep '^|'
    echo
    "$py" "$bench/loader_reference.py" profile --data "$data" --split "$split" --images "$n" --batch $batch | grep '^|'
done

if [[ $e2e == 1 ]]; then
    echo
    echo "ResNet-50 end to end on the folder: batch $e2e_batch, $e2e_warm warm-up + $e2e_steps timed steps, $threads threads, device $device"
    e2e_lines=()
    ref_flags=()
    [[ ${REFERENCE_NHWC:-0} == 1 ]] && ref_flags+=(--channels_last)
    for k in "${ks[@]}"; do
        ours=() ref=()
        for r in $(seq "$rounds"); do
            out="$tmp/e2e-$k-$r"
            OMP_NUM_THREADS="$threads" RUST_LOG=warn "$rr" --model_name resnet50 --dataset_path "$data" \
                --batch_size "$e2e_batch" --num_workers "$k" --epoch 1000 --step $((e2e_warm + e2e_steps)) \
                --logging_freq 1 --device "$device" --output_dir "$out" -o Engine.eval_iters=1 \
                >"$tmp/stdout" 2>"$tmp/stderr" \
                || { echo "loader_bench: run_resnet failed:" >&2; cat "$tmp/stderr" >&2; exit 1; }
            o=$("$py" "$bench/log_rate.py" "$out/resnet50_log.json" --skip "$e2e_warm" | ips)
            rm -rf "$out"
            t=$(OMP_NUM_THREADS="$threads" "$py" "$bench/loader_reference.py" train --data "$data" \
                --model resnet50 --batch "$e2e_batch" --workers "$k" --warmup "$e2e_warm" \
                --steps "$e2e_steps" --threads "$threads" --device "$device" "${ref_flags[@]}" | ips) \
                || { echo "loader_bench: the PyTorch end-to-end reference failed (k=$k)" >&2; exit 1; }
            echo "e2e k=$k round $r: run_resnet $o pytorch $t images/s [load $(cut -d' ' -f1 /proc/loadavg)]"
            ours+=("$o") ref+=("$t")
        done
        mo=$(med "${ours[@]}") mt=$(med "${ref[@]}")
        e2e_lines+=("e2e resnet50 k=$k: run_resnet $mo pytorch $mt ratio $(div "$mo" "$mt")")
    done
    echo
    printf '%s\n' "${e2e_lines[@]}"
fi
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
