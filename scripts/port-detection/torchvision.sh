#!/usr/bin/env bash
# `modelzoo port` on torchvision's detection reference training as it is (issue #39 item 6):
# pytorch/vision's references/detection (train.py, engine.py, utils.py, coco_utils.py,
# coco_eval.py, presets.py, transforms.py, group_by_aspect_ratio.py; never edited) trains a
# Faster R-CNN with a MobileNetV3 backbone (no pretrained weights: nothing is downloaded) for
# one epoch on a tiny generated COCO set (make_coco.py), then evaluates it (pycocotools' COCO
# summary: val.mAP in PORT.md). The script seeds nothing, so port runs it with `--seed SEED`
# (the kit's shim seeds every run; `--recheck` keeps it). Then a device-only bug (the learning rate
# x 0.9 when the device is sdaa) is written into the PORT, never into the public code, and
# `--recheck` must FAIL. Prints one row per port (verdict, exit code, both sides' seconds) and
# the mAP each side printed; PORT.md of each is in WORK/ported/.
#
# Usage (repo root, after `make build`): scripts/port-detection/torchvision.sh
#   VISION=/work/ext/vision: a directory holding references/detection of the pinned commit;
#     when it has none, VISION_GIT (a git directory of pytorch/vision, or of a repository with
#     its history) is archived there at VISION_COMMIT;
#   WORK=/tmp/port-detection-torchvision (outside the repository), TIMEOUT=900 (s per run),
#   SEED=0, TRAIN=8 images (batch 2: 4 iterations, each logged), THREADS=1.
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO="$PWD"
# pytorch/vision main of 2025-11-11 ("Fix r2 upload for m1 wheels (#9266)"); its
# references/detection last changed 2025-06-23 (#9107). The sha256 is over the eight .py files
# the training imports, in this order, so a checkout of other content is refused.
VISION_COMMIT="${VISION_COMMIT:-acccf86477759b2d3500f1ae1be065f7b1e409ec}"
FILES=(train.py engine.py utils.py coco_utils.py coco_eval.py presets.py transforms.py group_by_aspect_ratio.py)
SHA256=2cb96b72acd5193ca1207aff03671d9720e15a32727ce19f51ee399ea1259fc7
V="${VISION:-/work/ext/vision}" W="${WORK:-/tmp/port-detection-torchvision}"
py="$REPO/.venv/bin/python" mz="$REPO/target/release/modelzoo"
TIMEOUT="${TIMEOUT:-900}" SEED="${SEED:-0}" TRAIN="${TRAIN:-8}"
export OMP_NUM_THREADS="${THREADS:-1}"
[[ -x $mz ]] || { echo "error: $mz missing: run make build first" >&2; exit 2; }
case "$W/" in "$REPO"/*) echo "error: WORK=$W is inside the repository" >&2; exit 2 ;; esac
"$py" -c "import pycocotools" 2>/dev/null ||
  { echo "error: pycocotools is not in $REPO/.venv: run make build (python/requirements-reference.txt)" >&2; exit 2; }

det="$V/references/detection"
if [[ ! -f $det/train.py ]]; then
  [[ -n ${VISION_GIT:-} ]] || {
    echo "error: $det/train.py missing: set VISION to a pytorch/vision checkout at $VISION_COMMIT, or VISION_GIT to a git directory holding that commit" >&2
    exit 2
  }
  mkdir -p "$V" && git --git-dir="$VISION_GIT" archive "$VISION_COMMIT" references/detection | tar -x -C "$V" ||
    { echo "error: cannot archive references/detection at $VISION_COMMIT from $VISION_GIT" >&2; exit 2; }
fi
got=$(cd "$det" && cat "${FILES[@]}" 2>/dev/null | sha256sum | cut -d' ' -f1)
[[ $got == "$SHA256" ]] || {
  echo "error: $det is not references/detection at $VISION_COMMIT (sha256 of its ${#FILES[@]} files $got, want $SHA256)" >&2
  exit 2
}

# The project sits in WORK/src next to its data (train.py reads --data-path ../coco).
mkdir -p "$W/ported" "$W/src"
[[ -f $W/coco/annotations/instances_val2017.json && -f $W/coco/.train$TRAIN ]] || {
  rm -rf "$W/coco" && "$py" scripts/port-detection/make_coco.py "$W/coco" --train "$TRAIN" --val 3 >/dev/null &&
    touch "$W/coco/.train$TRAIN"
} || exit 2
ln -sfn "$W/coco" "$W/src/coco"

# summary DIR: "<verdict> | <exit> | <baseline s> | <port s> | <val.mAP original / port>" from
# DIR/port.json.
summary() {
  "$py" - "$1/port.json" <<'PY'
import json, sys
try:
    p = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"no port.json ({e}) | - | - | - | -"); sys.exit()
b, c = p["baseline"], p.get("candidate") or {}
maps = " / ".join(str(r.get("eval", {}).get("val.mAP", "-")) for r in (b, c))
print(f"{p['verdict']} | {p['exit_code']} | {b['seconds']:.1f} | {c.get('seconds', 0):.1f} | {maps}")
PY
}

cmd=(python train.py --data-path ../coco --model fasterrcnn_mobilenet_v3_large_320_fpn
     --epochs 1 -b 2 --workers 0 --print-freq 1 --output-dir "")
src="$W/src/detection" dst="$W/ported/detection"
rm -rf "$src" "$dst"
cp -r "$det" "$src"
echo "| run | command | verdict | exit | original s | port s | val.mAP original / port |"
echo "|---|---|---|---:|---:|---:|---|"
"$mz" port "$src" --seed "$SEED" --out "$dst" --timeout "$TIMEOUT" -- "${cmd[@]}" >"$W/ported/detection.out" 2>&1
printf '| detection | `modelzoo port SRC --seed %s --out DST -- %s` | %s |\n' "$SEED" "${cmd[*]}" "$(summary "$dst")"
"$py" - "$dst/train.py" <<'PY' || exit 2
import sys
path = sys.argv[1]
old = "lr=args.lr,"
new = 'lr=args.lr * (0.9 if device.type == "sdaa" else 1.0),'
text = open(path).read()
assert text.count(old) >= 1, f"{old!r} not in {path}"
open(path, "w").write(text.replace(old, new, 1))
PY
"$mz" port --recheck "$dst" >"$W/ported/detection-bug.out" 2>&1
printf '| detection, lr x 0.9 on sdaa injected | `--recheck` | %s |\n' "$(summary "$dst")"
echo "(outputs in $W/ported; vision $VISION_COMMIT; load average now $(cut -d' ' -f1-3 /proc/loadavg); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2))"
