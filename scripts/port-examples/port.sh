#!/usr/bin/env bash
# `modelzoo port` on pytorch/examples scripts as they are (issue #37): each example directory is
# copied from EXAMPLES (never edited) next to tiny generated data (make_data.py), ported with one
# command and the script's own flags, then — for the seeded ones — a device-only bug (the
# learning rate × 0.9 when the device is sdaa) is written into the PORT and `--recheck` must
# fail at the first step. Prints one row per port: example, command, verdict, exit code, both
# sides' seconds (from port.json); PORT.md of each is in WORK/ported/<example>[-bug]/.
#
# Usage (repo root, after `make build`): scripts/port-examples/port.sh [EXAMPLE...]
#   EXAMPLES=/work/ext/examples (pytorch/examples; checked on commit 77f55b9),
#   WORK=/tmp/port-examples-port (outside the repository), TIMEOUT=900 (seconds per run).
#   EXAMPLE: mnist vae dcgan imagenet wlm-lstm wlm-gru wlm-transformer ddp-tutorial ddp fsdp2
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO="$PWD"
EX="${EXAMPLES:-/work/ext/examples}" W="${WORK:-/tmp/port-examples-port}"
py="$REPO/.venv/bin/python" mz="$REPO/target/release/modelzoo"
TIMEOUT="${TIMEOUT:-900}"
export OMP_NUM_THREADS="${THREADS:-1}"
[[ -f $EX/mnist/main.py ]] || { echo "error: EXAMPLES=$EX is not a pytorch/examples checkout" >&2; exit 2; }
[[ -x $mz ]] || { echo "error: $mz missing: run make build first" >&2; exit 2; }
case "$W/" in "$REPO"/*) echo "error: WORK=$W is inside the repository" >&2; exit 2 ;; esac
[[ -f $W/data/MNIST/raw/train-images-idx3-ubyte ]] || "$py" scripts/port-examples/make_data.py "$W" >/dev/null || exit 2
# The projects sit in WORK/src next to their data (mnist and vae read ../data).
mkdir -p "$W/ported" "$W/src"
ln -sfn "$W/data" "$W/src/data"
ln -sfn "$W/imagenet" "$W/src/imagenet-data"

# verdict DIR: "<verdict> | <exit> | <baseline s> | <port s>" from DIR/port.json.
verdict() {
  "$py" - "$1/port.json" <<'PY'
import json, sys
try:
    p = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"no port.json ({e}) | - | - | -"); sys.exit()
c = p.get("candidate") or {}
print(f"{p['verdict']} | {p['exit_code']} | {p['baseline']['seconds']:.1f} | {c.get('seconds', 0):.1f}")
PY
}

# port NAME SUBDIR BUG_FILE BUG_FROM BUG_TO CMD...: ports EXAMPLES/SUBDIR with CMD; when BUG_FILE
# is given, injects the bug into the port and rechecks it.
port() {
  local name="$1" sub="$2" bug_file="$3" bug_from="$4" bug_to="$5"; shift 5
  local src="$W/src/$name" dst="$W/ported/$name"
  rm -rf "$src" "$dst"
  cp -r "$EX/$sub" "$src"
  "$mz" port "$src" --out "$dst" --timeout "$TIMEOUT" -- "$@" >"$W/ported/$name.out" 2>&1
  printf '| %s | `%s` | %s |\n' "$name" "$*" "$(verdict "$dst")"
  [[ -n $bug_file ]] || return 0
  "$py" - "$dst/$bug_file" "$bug_from" "$bug_to" <<'PY'
import sys
path, old, new = sys.argv[1:]
text = open(path).read()
assert text.count(old) >= 1, f"{old!r} not in {path}"
open(path, "w").write(text.replace(old, new, 1))
PY
  "$mz" port --recheck "$dst" >"$W/ported/$name-bug.out" 2>&1
  printf '| %s, lr × 0.9 on sdaa injected | `--recheck` | %s |\n' "$name" "$(verdict "$dst")"
}

sdaa_lr='* (0.9 if device.type == "sdaa" else 1.0)'
torchrun="$REPO/.venv/bin/torchrun"
one() {
  case "$1" in
    mnist) port mnist mnist main.py "lr=args.lr" "lr=args.lr $sdaa_lr" \
      python main.py --epochs 1 --seed 1 --log-interval 1 --test-batch-size 100 ;;
    vae) port vae vae main.py "lr=1e-3" "lr=1e-3 $sdaa_lr" \
      python main.py --epochs 1 --seed 1 --log-interval 1 ;;
    dcgan) port dcgan dcgan main.py "lr=opt.lr," "lr=opt.lr $sdaa_lr," \
      python main.py --dataset fake --accel --manualSeed 1 --niter 1 --batchSize 16 --workers 0 --outf out --dry-run ;;
    imagenet) port imagenet imagenet main.py "args.lr," "args.lr $sdaa_lr," \
      python main.py -a resnet18 -j 2 -b 8 --epochs 1 --seed 1 --print-freq 1 ../imagenet-data ;;
    wlm-lstm|wlm-gru|wlm-transformer)
      local model=${1#wlm-}; model=${model^^}; [[ $model == TRANSFORMER ]] && model=Transformer
      local extra=(); [[ $model == Transformer ]] && extra=(--lr 5)
      port "$1" word_language_model main.py "lr = args.lr" "lr = args.lr $sdaa_lr" \
        python main.py --data ../data/wikitext-2 --epochs 1 --model "$model" --log-interval 5 --seed 1 --accel "${extra[@]}" ;;
    ddp-tutorial) port ddp-tutorial distributed/ddp-tutorial-series "" "" "" \
      "$torchrun" --nproc_per_node 2 --master_port 29611 multigpu_torchrun.py 2 1 --batch_size 32 ;;
    ddp) port ddp distributed/ddp "" "" "" \
      "$torchrun" --nproc_per_node 2 --rdzv_endpoint localhost:29612 example.py ;;
    fsdp2) port fsdp2 distributed/FSDP2 "" "" "" \
      "$torchrun" --nproc_per_node 2 --master_port 29613 example.py ;;
    *) echo "error: unknown example '$1'" >&2; exit 2 ;;
  esac
}

echo "| example | command | verdict | exit | original s | port s |"
echo "|---|---|---|---:|---:|---:|"
list=("$@"); [[ ${#list[@]} -eq 0 ]] && list=(mnist vae dcgan imagenet wlm-lstm wlm-gru wlm-transformer ddp-tutorial ddp fsdp2)
for e in "${list[@]}"; do one "$e"; done
echo "(outputs in $W/ported; load average now $(cut -d' ' -f1-3 /proc/loadavg); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2))"
