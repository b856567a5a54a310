#!/usr/bin/env bash
# The test of `modelzoo new --kind rust`: scaffold a model into a temporary copy of the
# workspace (its own Cargo.toml naming this repository's crates by absolute path, so the
# libraries built for this checkout are reused), build its run_<name> with cargo, train it two
# steps through the engine's entry point and check the metric log has both train.loss lines.
# Run by `make test` after the cargo tests (a nested cargo inside `cargo test` would wait on
# the build directory's lock). Exit 0 when every check holds.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
name=scaffold_check
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
fail() { echo "check-scaffold: $*" >&2; exit 1; }

# The workspace: this repository's manifest with only the new crate as member and every path
# dependency made absolute; the lock file as is (--offline: nothing new is resolved).
python3 - "$root/Cargo.toml" "$ws/Cargo.toml" "$name" <<'PY'
import re, sys
src, dst, name = sys.argv[1:]
text = open(src).read()
root = src.rsplit("/", 1)[0]
text = re.sub(r"members = \[[^\]]*\]", f'members = ["modelzoo/{name}"]', text, count=1, flags=re.S)
text = re.sub(r'path = "([^"/][^"]*)"', lambda m: f'path = "{root}/{m.group(1)}"', text)
open(dst, "w").write(text)
PY
cp "$root/Cargo.lock" "$ws/"
cp -r "$root/build-support" "$ws/"

"$root/target/release/modelzoo" new "$name" --kind rust --root "$ws" >/dev/null
[[ -f $ws/modelzoo/$name/src/recipe.rs ]] || fail "modelzoo new wrote no src/recipe.rs"
grep -q "name: $name" "$ws/model_config/model.yaml" || fail "no model.yaml entry for $name"

export LIBTORCH_USE_PYTORCH=1 PATH="$root/.venv/bin:$PATH"
(cd "$ws" && CARGO_TARGET_DIR="$root/target" cargo build --release --offline -q -p "modelzoo-$name") \
    || fail "the scaffolded crate does not build"
bin="$root/target/release/run_$name"
out="$ws/out"
RUST_LOG=warn "$bin" --step 2 --batch_size 8 --num_workers 0 --synthetic_samples 32 \
    --output_dir "$out" >"$ws/stdout" 2>"$ws/stderr" || { cat "$ws/stderr" >&2; fail "run_$name --step 2 failed"; }
log="$out/${name}_log.json"
[[ -f $log ]] || fail "no metric log $log"
n=$(grep '"train.loss"' "$log" | grep -vc METADATA || true)
[[ $n -eq 2 ]] || fail "$log has $n train.loss records, expected 2"
grep -q "run_$name: done, 2 steps" "$ws/stderr" || fail "no end-of-run line: $(tail -3 "$ws/stderr")"
rm -f "$bin"
echo "check-scaffold: modelzoo new --kind rust $name builds and trains 2 steps through app::main"
