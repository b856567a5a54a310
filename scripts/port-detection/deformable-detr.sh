#!/usr/bin/env bash
# Deformable-DETR (fundamentalvision/Deformable-DETR at 11169a6) through `modelzoo port` (issue
# #39 item 6): its tree is extracted from a git mirror into WORK (never into the repository),
# given the edits deformable_detr_edits.py lists (PyTorch 2.x's torchvision check in
# util/misc.py, no pretrained-weight download) and nothing else, next to a tiny generated COCO
# set (make_coco.py); then
#   1. `modelzoo port --op MSDeformAttnFunction=modelzoo_ops.msdeform:ms_deform_attn`: the CPU
#      baseline runs the project's own twin (ms_deform_attn_core_pytorch), the port the zoo's
#      op on the emulated sdaa — expected PASS, exit 0;
#   2. `modelzoo port --recheck` of that port with MODELZOO_MSDEFORM_FAULT=x-index (the zoo's op
#      with its planted sampling-index fault) — expected FAIL, exit 1.
# Prints one row per run (verdict, exit, both sides' seconds, val.mAP) and exits 0 when both
# verdicts are the expected ones. Each PORT.md is kept as WORK/deformable-detr.{pass,fault}.PORT.md.
#
# Usage (repo root, after `make build`): scripts/port-detection/deformable-detr.sh
#   DDETR_GIT=/work/.mirror/fundamentalvision+Deformable-DETR/repo (a git dir holding 11169a6),
#   WORK=/tmp/port-detection-ddetr (outside the repository), TIMEOUT=1800 (seconds per run),
#   THREADS=1 (OpenMP threads a run).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO="$PWD"
GIT="${DDETR_GIT:-/work/.mirror/fundamentalvision+Deformable-DETR/repo}" COMMIT=11169a6
W="${WORK:-/tmp/port-detection-ddetr}"
py="$REPO/.venv/bin/python" mz="$REPO/target/release/modelzoo"
TIMEOUT="${TIMEOUT:-1800}"
export OMP_NUM_THREADS="${THREADS:-1}"
[[ -x $mz ]] || { echo "error: $mz missing: run make build first" >&2; exit 2; }
git --git-dir="$GIT" cat-file -e "$COMMIT^{commit}" 2>/dev/null \
    || { echo "error: DDETR_GIT=$GIT has no commit $COMMIT of fundamentalvision/Deformable-DETR" >&2; exit 2; }
"$py" -c "import pycocotools, scipy" 2>/dev/null \
    || { echo "error: pycocotools and scipy are not in $REPO/.venv: run make build (python/requirements-reference.txt)" >&2; exit 2; }
case "$W/" in "$REPO"/*) echo "error: WORK=$W is inside the repository" >&2; exit 2 ;; esac

# The project sits in WORK/src next to its data (--coco_path ../coco).
src="$W/src/deformable-detr" dst="$W/ported/deformable-detr"
rm -rf "$src" "$dst" "$W/src/coco"
mkdir -p "$src" "$W/ported"
git --git-dir="$GIT" archive "$COMMIT" | tar -x -C "$src" || exit 2
"$py" scripts/port-detection/deformable_detr_edits.py "$src" || exit 2
"$py" scripts/port-detection/make_coco.py "$W/src/coco" --train 30 --val 4 --size 320x40 >/dev/null || exit 2

# row NAME DIR SECONDS: "| NAME | verdict | exit | original s | port s | val.mAP (original, port) | wall s |"
row() {
  "$py" - "$2/port.json" "$1" "$3" <<'PY'
import json, sys
path, name, wall = sys.argv[1:]
try:
    p = json.load(open(path))
except Exception as e:
    print(f"| {name} | no port.json ({e}) | - | - | - | - | {wall} |"); sys.exit()
b, c = p.get("baseline") or {}, p.get("candidate") or {}
def metric(run):
    for k in ("eval", "metrics"):
        v = (run.get(k) or {})
        if isinstance(v, dict) and "val.mAP" in v:
            return v["val.mAP"]
    return "-"
print(f"| {name} | {p['verdict']} | {p['exit_code']} | {b.get('seconds', 0):.0f} | "
      f"{c.get('seconds', 0):.0f} | {metric(b)}, {metric(c)} | {wall} |")
PY
}

args=(python main.py --coco_path ../coco --batch_size 1 --lr_backbone 0 --enc_layers 1
      --dec_layers 1 --num_queries 50 --num_workers 0 --epochs 1)
export PYTHONPATH="$REPO/modelzoo/ops${PYTHONPATH:+:$PYTHONPATH}"
echo "| run | verdict | exit | original s | port s | val.mAP (original, port) | wall s |"
echo "|---|---|---:|---:|---:|---|---:|"
start=$SECONDS
"$mz" port "$src" --out "$dst" --timeout "$TIMEOUT" \
    --op MSDeformAttnFunction=modelzoo_ops.msdeform:ms_deform_attn -- "${args[@]}" \
    >"$W/deformable-detr.pass.out" 2>&1
pass_rc=$?
row "port, zoo op" "$dst" $((SECONDS - start))
cp "$dst/PORT.md" "$W/deformable-detr.pass.PORT.md" 2>/dev/null
start=$SECONDS
MODELZOO_MSDEFORM_FAULT=x-index "$mz" port --recheck "$dst" >"$W/deformable-detr.fault.out" 2>&1
fault_rc=$?
row "recheck, zoo op with its planted fault (MODELZOO_MSDEFORM_FAULT=x-index)" "$dst" $((SECONDS - start))
cp "$dst/PORT.md" "$W/deformable-detr.fault.PORT.md" 2>/dev/null
echo "(outputs in $W; load average now $(cut -d' ' -f1-3 /proc/loadavg); $(grep -c ^processor /proc/cpuinfo) cores;$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2))"
if [[ $pass_rc -eq 0 && $fault_rc -eq 1 ]]; then
  echo "as expected: PASS (exit 0), then FAIL with the fault (exit 1)"
  exit 0
fi
echo "NOT as expected: port exit $pass_rc (want 0), faulty recheck exit $fault_rc (want 1); see $W/deformable-detr.{pass,fault}.out" >&2
exit 1
