#!/usr/bin/env bash
# Every CUDA claim of the kit, checked in one run on a GPU machine, written as a dated markdown
# section for docs/benchmarks.md. Made for the GPU machine a session may be lent (device tool):
# it has torch 2.11.0+cu130 but no Rust and no network, so the binaries are built here and
# carried; nothing is compiled or downloaded there.
#
#   scripts/gpu-check.sh --dry-run            list every check and the commands it runs
#   scripts/gpu-check.sh [--out FILE] [--only ID[,ID...]] [--rounds N] [--bin-dir DIR]
#   scripts/gpu-check.sh --smoke              the same checks, tiny and on the CPU: tests this
#                                             script itself (its figures measure nothing)
#
# On the lent machine (from this repo's root, after `make build` here): strip the binaries into an
# ignored folder (unstripped they are over the device tool's 64 MiB carry limit), with the
# libjpeg-turbo libraries they link (the GPU machine has none) in its lib/, carry it, run
#     mkdir -p out/gpu-bin/lib && for b in run_resnet run_gpt run_vit run_llama run_bert modelzoo modelzoo-env; do
#         strip -o out/gpu-bin/$b target/release/$b; done
#     cp -L /lib/x86_64-linux-gnu/{libjpeg.so.62,libturbojpeg.so.0} out/gpu-bin/lib/   # here
#     bash scripts/gpu-check.sh --bin-dir out/gpu-bin --only ID,... --out $OUT/gpu-check.md   # there
# The whole list takes longer than one device command may run: split it with --only. Each row is
# also printed to stderr as it is measured, so a run cut off by a time limit keeps its rows.
#
# Side-by-side figures alternate run_<model> and PyTorch eager rounds (A/B/A/B...) and report the
# median of --rounds (default 3). Each check is independent: a failing one is recorded with the
# tail of its log and the others still run. Exit 0 when every check ran and met its target,
# 1 when one failed or missed, 2 on bad arguments or a machine without a usable GPU.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bench="$root/scripts/bench"

checks=(device resnet50-bs64 resnet50-bs256 resnet50-bs256-channels-last resnet50-jpeg-amp gpt345m-bf16 vit-b16-amp llama-1b-bf16 bert-base-bf16 ddp-nccl-1gpu compare-cuda-cpu)
declare -A what=(
    [device]="open cuda:0 through the carried binaries (libtorch_cuda dlopen'ed at run time), \`modelzoo env\` device rows and memory (cudaMemGetInfo)"
    [resnet50-bs64]="run_resnet resnet50 bs 64 at 224 px, fp32 and AMP (fp16 autocast + loss scaling), compute only (--fixed_batch, one batch kept on the GPU): img/s vs PyTorch eager torchvision with the same settings"
    [resnet50-bs256]="the same at bs 256"
    [resnet50-bs256-channels-last]="the same at bs 256, AMP, --channels_last on both sides"
    [resnet50-jpeg-amp]="run_resnet resnet50 bs 256 AMP trained end to end from a folder of real JPEG files (scripts/bench/loader_images.py, made there) with 12 loader workers vs PyTorch eager with torchvision's ImageFolder + DataLoader(num_workers=12) (scripts/bench/loader_reference.py train): img/s, does the loader feed the card"
    [gpt345m-bf16]="run_gpt gpt_345m_single_card.yaml, bf16 autocast, batch 8 x seq 1024: tokens/s and MFU vs PyTorch eager (scripts/bench/lm_e2e.py, same model and recipe)"
    [vit-b16-amp]="run_vit vit_b_16 bs 64 at 224 px, AMP (fp16 autocast + loss scaling), compute only (--fixed_batch; the reference trains on one fixed batch too): img/s vs torchvision's ViT in PyTorch eager (scripts/bench/vit_bench.sh; needs torchvision in that python)"
    [llama-1b-bf16]="run_llama llama_1.1b_single_card.yaml, bf16 autocast, batch 4 x seq 1024: tokens/s vs transformers' LlamaForCausalLM in PyTorch eager (scripts/bench/llama_bench.sh; needs transformers in that python)"
    [bert-base-bf16]="run_bert bert_base pretraining (masked-LM + next-sentence, LAMB), vocab 30522, bf16 autocast, batch 32 x seq 128: tokens/s vs transformers' BertForPreTraining in PyTorch eager (scripts/bench/bert_bench.sh; needs transformers in that python)"
    [ddp-nccl-1gpu]="run_resnet resnet50 bs 64 AMP, compute only (--fixed_batch, so that the loader does not hide the difference), as a 1-process data-parallel job (torchrun's environment: ProcessGroupNCCL from the NCCL shim embedded in run_resnet, + Reducer) vs no DDP: overhead, target < 3%"
    [compare-cuda-cpu]="run_resnet resnet18 at 32 px, make demo's job (24 steps, lr 0.001, seed 7, nchw on both) on the cpu and on cuda twice, with PyTorch's defaults (TF32 convolutions) and with NVIDIA_TF32_OVERRIDE=0; \`modelzoo compare\` of each cuda log against the cpu one (1% rule)"
)

usage() { sed -n '2,/^set /p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'; }
die() { echo "gpu-check: $*" >&2; exit 2; }

dry=0 smoke=0 out="" only="" rounds=3 bin_dir="$root/target/release"
while (($#)); do
    case "$1" in
        --dry-run) dry=1 ;;
        --smoke) smoke=1 ;;
        --out) out="${2:?--out needs a file}"; shift ;;
        --only) only="${2:?--only needs check ids}"; shift ;;
        --rounds) rounds="${2:?--rounds needs a number}"; shift ;;
        --bin-dir) bin_dir="${2:?--bin-dir needs a directory}"; shift ;;
        -h | --help) usage; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
    shift
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds $rounds: must be a positive integer"
selected=("${checks[@]}")
if [[ -n $only ]]; then
    IFS=, read -ra selected <<<"$only"
    for id in "${selected[@]}"; do
        [[ -n ${what[$id]+x} ]] || die "--only: unknown check '$id'; checks: ${checks[*]}"
    done
fi

py="${TORCH_PYTHON:-}"
for c in "$py" /opt/torch/.venv/bin/python3 "$root/.venv/bin/python" python3; do
    [[ -n $c ]] && command -v "$c" >/dev/null 2>&1 && { py="$c"; break; }
done
# torchvision for the ResNet reference: the GPU image has it; here scripts/bench/step_bench.sh
# installs it into target/bench-py.
[[ -d $root/target/bench-py/torchvision ]] && export PYTHONPATH="$root/target/bench-py${PYTHONPATH:+:$PYTHONPATH}"
RR="$bin_dir/run_resnet" RG="$bin_dir/run_gpt" RV="$bin_dir/run_vit" RL="$bin_dir/run_llama" RB="$bin_dir/run_bert" MZ="$bin_dir/modelzoo"
work="${GPU_CHECK_WORK:-}"
if ((dry)); then work="${work:-WORK}"; else work="${work:-$(mktemp -d)}"; mkdir -p "$work" || die "cannot create the work dir $work"; fi

# Sizes: the real ones, or --smoke's (CPU, tiny) to exercise the script itself.
dev=cuda r50="resnet50" bs_small=64 bs_big=256 steps=13 warmup=3
gpt_cfg="$root/modelzoo/gpt/configs/gpt_345m_single_card.yaml" gpt_batch=8 gpt_seq=1024
vit_env="" vit_args="vit_b_16 64 10 --device cuda --autocast --fixed_batch" llama_env="BATCH=4 SEQ=1024 STEPS=13 SKIP=3" llama_case=1b
bert_env="BATCH=32 SEQ=128 STEPS=23 SKIP=3" bert_case=base
jpeg_files=4000 jpeg_bs=256 jpeg_k=12 jpeg_size=224
if ((smoke)); then
    dev=cpu r50="resnet18 --image_size 32" bs_small=8 bs_big=16 steps=5 rounds=1
    gpt_cfg="$root/modelzoo/gpt/configs/gpt_tiny.yaml" gpt_batch=4 gpt_seq=64
    vit_env="IMAGE_SIZE=32 NUM_CLASSES=10" vit_args="vit_tiny 8 3 --device cpu --autocast --fixed_batch"
    llama_env="BATCH=2 SEQ=32 STEPS=4 SKIP=1" llama_case=tiny
    bert_env="BATCH=2 SEQ=32 STEPS=4 SKIP=1" bert_case=tiny
    jpeg_files=512 jpeg_bs=8 jpeg_k=1 jpeg_size=32
fi

# The commands, one builder each: --dry-run prints them, a run evaluates them.
cmd_resnet() { # out_dir device model(+size) batch steps flags...
    local dir=$1 d=$2 model=$3 bs=$4 n=$5; shift 5
    echo "RUST_LOG=warn $RR --device $d --model_name $model --batch_size $bs --step $n --logging_freq 1 --num_workers 4 --synthetic_samples $((bs * (n + 1))) --output_dir $dir $*"
}
cmd_resnet_ref() { # model(+size) batch flags...
    local model=$1 bs=$2; shift 2
    echo "$py $bench/resnet_reference.py --device $dev --model $model --batch_size $bs --warmup $warmup --steps $((steps - warmup)) $*"
}
cmd_gpt() { # out_dir
    echo "RUST_LOG=warn $RG -c $gpt_cfg --device $dev --autocast --amp_dtype bf16 --step $steps --output_dir $1" \
        "-o Data.dataset.input_dir= -o Data.batch_size.global_batch_size=$gpt_batch -o Data.batch_size.local_batch_size=$gpt_batch" \
        "-o Data.batch_size.micro_batch_size=$gpt_batch -o Data.dataset.max_seq_len=$gpt_seq -o Model.hidden_dropout_prob=0" \
        "-o Model.attention_probs_dropout_prob=0 -o Engine.logging_freq=1 -o Engine.eval_freq=1000000 -o Engine.eval_iters=1" \
        "-o Engine.save_load.save_steps=1000000"
}
# The side-by-side scripts of scripts/bench/, pointed at the carried binaries and this python
# (they need at least 3 rounds for a median).
cmd_vit() {
    echo "ROUNDS=$((rounds < 3 ? 3 : rounds)) PYTHON=$py RUN_VIT=$RV $vit_env $bench/vit_bench.sh $vit_args"
}
cmd_llama() {
    echo "ROUNDS=$((rounds < 3 ? 3 : rounds)) PYTHON=$py RUN_LLAMA=$RL DEVICE=$dev AMP=bf16 $llama_env $bench/llama_bench.sh $llama_case"
}
cmd_bert() {
    echo "ROUNDS=$((rounds < 3 ? 3 : rounds)) PYTHON=$py RUN_BERT=$RB DEVICE=$dev AMP=bf16 $bert_env $bench/bert_bench.sh $bert_case"
}
cmd_gpt_ref() {
    echo "$py $bench/lm_e2e.py run gpt $gpt_cfg --batch $gpt_batch --seq $gpt_seq --steps $steps --skip $warmup --device $dev --amp bf16"
}
# The ddp check's run without DDP; cmd_ddp1 runs the same with a process group of one.
cmd_ddp_plain() { # out_dir
    cmd_resnet "$1" "$dev" "$r50" "$bs_small" "$steps" --autocast --fixed_batch
}
# A data-parallel job of one process, in the environment `torchrun --nproc_per_node 1` gives it
# (run_<model>'s own --nproc_per_node 1 runs without a process group).
cmd_ddp1() { # out_dir port
    echo "WORLD_SIZE=1 RANK=0 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$2 $(cmd_ddp_plain "$1")"
}
# make demo's job (scripts/demo.sh: lr 0.001 keeps the loss where the 1% rule means something),
# nchw on both devices so that they differ in the device alone.
cmd_cmp_run() { # out_dir device
    echo "RUST_LOG=warn $RR --device $2 --model_name resnet18 --num_classes 10 --image_size 32 --synthetic_samples 512" \
        "--batch_size 32 --step 24 --logging_freq 1 --lr 0.001 --seed 7 --memory_format nchw --output_dir $1"
}
# It runs once on the CPU and twice on CUDA: with PyTorch's defaults (cuDNN convolutions in TF32
# on Ampere and later, as a porter's CUDA baseline runs) and NVIDIA_TF32_OVERRIDE=0 (full fp32).
cmp_env() { [[ $1 == tf32-off ]] && echo "NVIDIA_TF32_OVERRIDE=0 "; }
# Training from real JPEG files: the folder is made there once (a few seconds a thousand files).
cmd_jpeg_data() { echo "$py $bench/loader_images.py $work/jpeg --files $jpeg_files --val $((jpeg_bs * 2))"; }
cmd_jpeg() { # out_dir
    echo "RUST_LOG=warn $RR --device $dev --model_name $r50 --dataset_path $work/jpeg --batch_size $jpeg_bs" \
        "--num_workers $jpeg_k --epoch 1000 --step $steps --logging_freq 1 --autocast --output_dir $1 -o Engine.eval_iters=1"
}
cmd_jpeg_ref() {
    echo "$py $bench/loader_reference.py train --data $work/jpeg --model ${r50%% *} --size $jpeg_size --batch $jpeg_bs" \
        "--workers $jpeg_k --warmup $warmup --steps $((steps - warmup)) --device $dev --amp"
}
resnet_flags() { # check id -> the flag sets it compares, one per line
    case "$1" in
        *channels-last) echo "--channels_last --autocast" ;;
        *) echo ""; echo "--autocast" ;;
    esac
}
resnet_batch() { [[ $1 == resnet50-bs64 ]] && echo "$bs_small" || echo "$bs_big"; }

if ((dry)); then
    echo "gpu-check: ${#selected[@]} checks (binaries from $bin_dir, python $py, $rounds alternating rounds each)"
    for id in "${selected[@]}"; do
        echo
        echo "[$id] ${what[$id]}"
        case "$id" in
            device) echo "  $MZ env --json"; echo "  $(cmd_resnet "$work/open" "$dev" resnet18 8 2 --image_size 32)" ;;
            resnet50-jpeg-amp) echo "  $(cmd_jpeg_data)"; echo "  A: $(cmd_jpeg "$work/jpeg-run")"; echo "  B: $(cmd_jpeg_ref)" ;;
            resnet50-*)
                while IFS= read -r f; do
                    echo "  A: $(cmd_resnet "$work/$id" "$dev" "$r50" "$(resnet_batch "$id")" "$steps" $f --fixed_batch)"
                    echo "  B: $(cmd_resnet_ref "$r50" "$(resnet_batch "$id")" ${f/--autocast/--amp})"
                done < <(resnet_flags "$id") ;;
            gpt345m-bf16) echo "  A: $(cmd_gpt "$work/gpt")"; echo "  B: $(cmd_gpt_ref)" ;;
            vit-b16-amp) echo "  $(cmd_vit)" ;;
            llama-1b-bf16) echo "  $(cmd_llama)" ;;
            bert-base-bf16) echo "  $(cmd_bert)" ;;
            ddp-nccl-1gpu)
                echo "  A: $(cmd_ddp_plain "$work/plain")"
                echo "  B: $(cmd_ddp1 "$work/ddp" 29601)" ;;
            compare-cuda-cpu)
                echo "  $(cmd_cmp_run "$work/cmp-candidate" cpu)"
                for mode in defaults tf32-off; do
                    echo "  $(cmp_env $mode)$(cmd_cmp_run "$work/cmp-$mode" "$dev")"
                    echo "  $MZ compare --baseline $work/cmp-$mode/resnet18_log.json --candidate $work/cmp-candidate/resnet18_log.json --report-dir $work/cmp-report-$mode"
                done ;;
        esac
    done
    exit 0
fi

for b in "$RR" "$RG" "$RV" "$RL" "$RB" "$MZ" "$bin_dir/modelzoo-env"; do
    [[ -x $b ]] || die "$b missing: run 'make build' here and carry run_resnet, run_gpt, run_vit, run_llama, run_bert, modelzoo and modelzoo-env (see --help)"
done
torch_lib="$("$py" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)" \
    || die "$py cannot import torch; set TORCH_PYTHON to the python of torch 2.11.0"
# The binaries carry an rpath to the build machine's .venv; here use the torch of this machine.
# A lib/ beside the binaries holds the system libraries they link that this machine may lack
# (libjpeg-turbo's libjpeg.so.62 and libturbojpeg.so.0; see --help).
[[ -d $bin_dir/lib ]] && torch_lib="$torch_lib:$(cd "$bin_dir/lib" && pwd)"
export LD_LIBRARY_PATH="$torch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ((smoke)); then
    gpu="SMOKE RUN on the CPU: tests the script, measures nothing"
else
    gpu="$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -n1)"
    [[ -n $gpu ]] || die "no NVIDIA GPU visible (nvidia-smi lists none): this script is for the lent GPU machine (--smoke tests it on the CPU)"
fi

rows=() failures=0
row() { # check figure detail verdict
    rows+=("| $1 | $2 | $3 | $4 |")
    echo "gpu-check: row | $1 | $2 | $3 | $4 |" >&2 # survives a run cut off before the table
    [[ $4 == PASS* || $4 == info ]] || failures=$((failures + 1))
}
tail_of() { tail -n 15 "$1" | sed 's/|/\\|/g' | tr '\n' ' ' | cut -c1-600; }
py_eval() { "$py" -c "import sys, statistics; a = sys.argv[1:]; print($1)" "${@:2}"; }
median() { py_eval 'f"{statistics.median(float(x) for x in a):.2f}"' "$@"; }
# "PASS 1.031x" when ours/ref >= 1, else "MISS 0.912x"
verdict_ratio() { py_eval '("PASS" if float(a[0]) >= float(a[1]) else "MISS") + f" {float(a[0]) / float(a[1]):.3f}x"' "$1" "$2"; }
log_rate() { "$py" "$bench/log_rate.py" "$1" --skip "$warmup" | "$py" -c 'import json, sys; print(f"{json.load(sys.stdin)[sys.argv[1]]:.2f}")' "$2"; }
run_logged() { eval "$1" >"$2" 2>&1; } # command, log file

check_device() {
    if "$MZ" env --json >"$work/env.json" 2>"$work/env.err"; then
        row device "modelzoo env --json" "$(tr -d '\n' <"$work/env.json" | cut -c1-600 | sed 's/|/\\|/g')" info
    else
        row device "modelzoo env --json" "failed: $(tail_of "$work/env.err")" FAIL
    fi
    if run_logged "$(cmd_resnet "$work/open" "$dev" resnet18 8 2 --image_size 32)" "$work/open.log"; then
        row device "run_resnet --device $dev, 2 steps" "$(grep -m1 -o 'train.loss : [0-9.e+-]*' "$work/open.log")" PASS
    else
        row device "run_resnet --device $dev, 2 steps" "failed: $(tail_of "$work/open.log")" FAIL
    fi
}

check_resnet() { # id
    local id=$1 bs f
    bs=$(resnet_batch "$id")
    while IFS= read -r f; do
        local label="$id ${f:-fp32}" ours=() refs=() r ok=1
        for r in $(seq "$rounds"); do
            local d="$work/$id-$(echo "$f" | tr -dc 'a-z')-$r" j
            if ! run_logged "$(cmd_resnet "$d" "$dev" "$r50" "$bs" "$steps" $f --fixed_batch)" "$d.log"; then
                row "$label" "run_resnet round $r" "failed: $(tail_of "$d.log")" FAIL; ok=0; break
            fi
            ours+=("$(log_rate "$d/${r50%% *}_log.json" ips)")
            if ! j=$(eval "$(cmd_resnet_ref "$r50" "$bs" ${f/--autocast/--amp})" 2>"$d.ref.log"); then
                row "$label" "pytorch round $r" "failed: $(tail_of "$d.ref.log")" FAIL; ok=0; break
            fi
            refs+=("$(echo "$j" | "$py" -c 'import json, sys; print("%.2f" % json.load(sys.stdin)["ips"])')")
        done
        ((ok)) || continue
        local mo mr
        mo=$(median "${ours[@]}") mr=$(median "${refs[@]}")
        row "$label" "img/s run_resnet $mo vs eager $mr" "rounds: ${ours[*]} / ${refs[*]}" "$(verdict_ratio "$mo" "$mr")"
    done < <(resnet_flags "$id")
}

check_jpeg() {
    local id=resnet50-jpeg-amp ours=() refs=() r j t0 made
    t0=$(date +%s)
    if ! run_logged "$(cmd_jpeg_data)" "$work/jpeg-data.log"; then
        row $id "loader_images.py" "failed: $(tail_of "$work/jpeg-data.log")" FAIL; return
    fi
    made="$(tail -n1 "$work/jpeg-data.log" | sed 's/|/\\|/g'), made in $(($(date +%s) - t0)) s"
    for r in $(seq "$rounds"); do
        local d="$work/jpeg-$r"
        if ! run_logged "$(cmd_jpeg "$d")" "$d.log"; then
            row $id "run_resnet round $r" "failed: $(tail_of "$d.log")" FAIL; return
        fi
        ours+=("$(log_rate "$d/${r50%% *}_log.json" ips)")
        if ! j=$(eval "$(cmd_jpeg_ref)" 2>"$d.ref.log"); then
            row $id "pytorch round $r" "failed: $(tail_of "$d.ref.log")" FAIL; return
        fi
        refs+=("$(echo "$j" | tail -n1 | "$py" -c 'import json, sys; print("%.2f" % json.load(sys.stdin)["ips"])')")
    done
    local mo mr
    mo=$(median "${ours[@]}") mr=$(median "${refs[@]}")
    row $id "img/s run_resnet $mo vs eager $mr ($jpeg_k loader workers each)" "rounds: ${ours[*]} / ${refs[*]}; folder: $made" \
        "$(verdict_ratio "$mo" "$mr")"
}

check_gpt() {
    local ours=() refs=() mfu=() r t
    for r in $(seq "$rounds"); do
        local d="$work/gpt-$r"
        if ! run_logged "$(cmd_gpt "$d")" "$d.log"; then
            row gpt345m-bf16 "run_gpt round $r" "failed: $(tail_of "$d.log")" FAIL; return
        fi
        ours+=("$(log_rate "$d/gpt_log.json" ips)") mfu+=("$(log_rate "$d/gpt_log.json" mfu)")
        if ! t=$(eval "$(cmd_gpt_ref)" 2>"$d.ref.log"); then
            row gpt345m-bf16 "pytorch round $r" "failed: $(tail_of "$d.ref.log")" FAIL; return
        fi
        refs+=("$(echo "$t" | sed -n 's/^pytorch tokens\/s \([0-9.]*\).*/\1/p')")
    done
    local mo mr
    mo=$(median "${ours[@]}") mr=$(median "${refs[@]}")
    row gpt345m-bf16 "tokens/s run_gpt $mo vs eager $mr; run_gpt MFU $(median "${mfu[@]}")%" \
        "rounds: ${ours[*]} / ${refs[*]}" "$(verdict_ratio "$mo" "$mr")"
}

# A side-by-side script's run: its ratio line becomes the row (PASS at >= 1.0).
check_side_by_side() { # id command
    local id=$1 log="$work/$1.log" ratio
    if ! run_logged "$2" "$log"; then
        row "$id" "side-by-side script" "failed: $(tail_of "$log")" FAIL; return
    fi
    ratio=$(grep -Eo 'ratio run_[a-z]+ ?/ ?pytorch[ =]+[0-9.]+' "$log" | grep -Eo '[0-9.]+$' | tail -n1)
    row "$id" "$(grep -E 'median' "$log" | tail -n1 | sed 's/|/\\|/g')" "ratio ${ratio:-?}" \
        "$(py_eval '"PASS" if float(a[0]) >= 1.0 else "MISS"' "${ratio:-0}")"
}

check_ddp() {
    local plain=() ddp=() r
    for r in $(seq "$rounds"); do
        local d="$work/ddp-$r"
        if ! run_logged "$(cmd_ddp_plain "$d-plain")" "$d-plain.log"; then
            row ddp-nccl-1gpu "no-DDP round $r" "failed: $(tail_of "$d-plain.log")" FAIL; return
        fi
        plain+=("$(log_rate "$d-plain/${r50%% *}_log.json" ips)")
        if ! run_logged "$(cmd_ddp1 "$d-ddp" $((29600 + r)))" "$d-ddp.log"; then
            row ddp-nccl-1gpu "data-parallel round $r" "failed: $(tail_of "$d-ddp.log")" FAIL; return
        fi
        ddp+=("$(log_rate "$d-ddp/${r50%% *}_log.json" ips)")
    done
    local md mp over
    md=$(median "${ddp[@]}") mp=$(median "${plain[@]}")
    over=$(py_eval 'f"{(1 - float(a[0]) / float(a[1])) * 100:.2f}"' "$md" "$mp")
    row ddp-nccl-1gpu "overhead ${over}% (img/s DDP $md vs $mp)" "rounds: ${ddp[*]} / ${plain[*]}" \
        "$(py_eval '"PASS" if float(a[0]) < 3 else "MISS"' "$over")"
}

check_compare() {
    if ! run_logged "$(cmd_cmp_run "$work/cmp-candidate" cpu)" "$work/cmp-candidate.log"; then
        row compare-cuda-cpu "run_resnet cpu" "failed: $(tail_of "$work/cmp-candidate.log")" FAIL; return
    fi
    local mode verdict
    for mode in defaults tf32-off; do
        if ! run_logged "$(cmp_env $mode)$(cmd_cmp_run "$work/cmp-$mode" "$dev")" "$work/cmp-$mode.log"; then
            row "compare-cuda-cpu ($mode)" "run_resnet $dev" "failed: $(tail_of "$work/cmp-$mode.log")" FAIL; continue
        fi
        verdict=PASS
        "$MZ" compare --baseline "$work/cmp-$mode/resnet18_log.json" --candidate "$work/cmp-candidate/resnet18_log.json" \
            --report-dir "$work/cmp-report-$mode" >"$work/cmp-$mode.txt" 2>&1 || verdict=FAIL
        row "compare-cuda-cpu ($mode)" "$dev baseline vs cpu candidate" "$(grep -E 'final value \(mean|relative error of the final|max \|relative|val\.top1|fact\(s\) differ|^(PASS|FAIL)' "$work/cmp-$mode.txt" |
            sed 's/  */ /g; s/|/\\|/g' | tr '\n' ';' | cut -c1-900)" "$verdict"
    done
}

echo "gpu-check: $gpu; torch libs $torch_lib; work dir $work" >&2
for id in "${selected[@]}"; do
    echo "gpu-check: [$id] ${what[$id]}" >&2
    case "$id" in
        device) check_device ;;
        resnet50-jpeg-amp) check_jpeg ;;
        resnet50-*) check_resnet "$id" ;;
        gpt345m-bf16) check_gpt ;;
        vit-b16-amp) check_side_by_side "$id" "$(cmd_vit)" ;;
        llama-1b-bf16) check_side_by_side "$id" "$(cmd_llama)" ;;
        bert-base-bf16) check_side_by_side "$id" "$(cmd_bert)" ;;
        ddp-nccl-1gpu) check_ddp ;;
        compare-cuda-cpu) check_compare ;;
    esac
done

report=$(
    echo "## GPU check, $(date -u +%Y-%m-%d) — $gpu"
    echo
    echo "\`scripts/gpu-check.sh$(((smoke)) && echo ' --smoke')\`: binaries built on the CPU machine and carried; torch $("$py" -c 'import torch; print(torch.__version__)') there; host CPU $(lscpu | sed -n 's/^Model name: *//p' | head -n1), $(nproc) cores. Side-by-side rows alternate run_<model> and PyTorch eager rounds; figures are medians of $rounds."
    echo
    echo "| check | figure | detail | verdict |"
    echo "|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
)
if [[ -n $out ]]; then
    printf '%s\n' "$report" >"$out.tmp.$$" && mv "$out.tmp.$$" "$out"
fi
printf '%s\n' "$report"
((failures == 0))
