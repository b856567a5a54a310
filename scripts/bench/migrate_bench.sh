#!/bin/bash
# Benchmark `modelzoo migrate` (dry run: diff to /dev/null) against the Python reference
# (scripts/bench/migrate_ref.py) on one generated tree, side by side, best of N runs.
#
# usage: scripts/bench/migrate_bench.sh [FILES=10000] [BYTES_PER_FILE=20000] [RUNS=3]
# Needs target/release/modelzoo (make build). The tree is generated into a temp dir and removed.
set -euo pipefail
cd "$(dirname "$0")/../.."
FILES=${1:-10000}
SIZE=${2:-20000}
RUNS=${3:-3}
BIN=target/release/modelzoo
[[ -x $BIN ]] || { echo "error: $BIN missing; run 'make build' first" >&2; exit 2; }
TREE=$(mktemp -d "${TMPDIR:-/tmp}/migrate-bench.XXXXXX")
trap 'rm -rf "$TREE"' EXIT
python3 scripts/bench/migrate_gen.py "$TREE" "$FILES" "$SIZE"
MB=$(du -sm --apparent-size "$TREE" | cut -f1)
echo "tree: $FILES files, ${MB} MB ($(lscpu | grep 'Model name' | sed 's/ \+/ /g'), $(nproc) cores)"

best() { # best wall seconds of RUNS runs of "$@"
  local best=""
  for _ in $(seq "$RUNS"); do
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    t1=$(date +%s.%N)
    best=$(python3 -c "b='$best'; t=$t1-$t0; print(min(float(b), t) if b else t)")
  done
  echo "$best"
}
# Warm the page cache so both read from memory.
cat "$TREE"/*/*.py >/dev/null
RS=$(best "$BIN" migrate "$TREE")
PY=$(best python3 scripts/bench/migrate_ref.py "$TREE")
python3 - "$FILES" "$MB" "$RS" "$PY" <<'PYEOF'
import sys
files, mb, rs, py = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
print(f"| tool | wall s (best) | files/s | MB/s |")
print(f"|---|---|---|---|")
print(f"| modelzoo migrate (dry run) | {rs:.2f} | {files/rs:,.0f} | {mb/rs:,.1f} |")
print(f"| Python reference (re + difflib) | {py:.2f} | {files/py:,.0f} | {mb/py:,.1f} |")
print(f"speed-up: {py/rs:.1f}x")
PYEOF
