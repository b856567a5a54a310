#!/usr/bin/env bash
# Checks device-sdaa's `bindgen` feature (NOT part of `make test`: it needs libclang).
#
#  1. builds the SDAA emulator, which installs its C headers into target/sdaa-emulator/include;
#  2. runs device-sdaa's emulator tests with declarations generated from those headers
#     (the build itself proves, at compile time, that every generated declaration equals the
#     checked-in one: src/bindings.rs `drift_check`);
#  3. shows the build fails, with a message, when SDAA_HOME has no include directory;
#  4. shows a header that drifts from the checked-in API (a parameter type, an enum value)
#     is a compile error.
# Uses its own CARGO_TARGET_DIR (target/bindgen) so the shared release build is untouched.
#
# Usage: device-sdaa/tests/bindgen_feature.sh      (needs: apt-get install -y libclang-dev)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
export LIBTORCH_USE_PYTORCH="${LIBTORCH_USE_PYTORCH:-1}" PATH="$root/.venv/bin:$PATH"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target/bindgen}"

if ! ldconfig -p | grep -q 'libclang.*\.so' && [[ -z "${LIBCLANG_PATH:-}" ]]; then
    echo "bindgen_feature: libclang not found; install it (apt-get install -y libclang-dev) or set LIBCLANG_PATH" >&2
    exit 1
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
fail() { echo "bindgen_feature: FAIL: $*" >&2; exit 1; }

echo "== 1. emulator + headers"
bash scripts/build-emulator.sh
[[ -f target/sdaa-emulator/include/tccl.h ]] || fail "build-emulator did not install the headers"

echo "== 2. emulator tests on the generated declarations"
SDAA_HOME="$root/target/sdaa-emulator" cargo test --release -p device-sdaa --features bindgen \
    --test sdaa_emulator --test tccl_emulator

build_with() { # SDAA_HOME, log file; succeeds when the build fails
    ! SDAA_HOME="$1" cargo build --release -p device-sdaa --features bindgen --lib >"$2" 2>&1
}

echo "== 3. SDAA_HOME without include/ is a build error naming it"
mkdir -p "$scratch/no-sdk"
build_with "$scratch/no-sdk" "$scratch/3.log" || fail "build succeeded without headers"
grep -q "$scratch/no-sdk/include is not a directory (SDAA_HOME/include)" "$scratch/3.log" \
    || { cat "$scratch/3.log"; fail "error does not name the directory and SDAA_HOME"; }

echo "== 4a. a parameter type drifting from the checked-in API is a compile error"
mkdir -p "$scratch/drift-type"
cp -r target/sdaa-emulator/include "$scratch/drift-type/"
sed -i 's/tcclDataType_t datatype, int root,/tcclDataType_t datatype, long root,/' \
    "$scratch/drift-type/include/tccl.h"
grep -q 'long root' "$scratch/drift-type/include/tccl.h" || fail "could not edit tccl.h"
build_with "$scratch/drift-type" "$scratch/4a.log" || fail "a drifted tcclBroadcast compiled"
grep -q "signature_of::tcclBroadcast<" "$scratch/4a.log" \
    || { cat "$scratch/4a.log"; fail "the error is not the tcclBroadcast type mismatch"; }

echo "== 4b. an enum value drifting from the checked-in numbering is a compile error"
mkdir -p "$scratch/drift-value"
cp -r target/sdaa-emulator/include "$scratch/drift-value/"
sed -i 's/tcclFloat32 = 7,/tcclFloat32 = 17,/' "$scratch/drift-value/include/tccl.h"
grep -q 'tcclFloat32 = 17' "$scratch/drift-value/include/tccl.h" || fail "could not edit tccl.h"
build_with "$scratch/drift-value" "$scratch/4b.log" || fail "a renumbered tcclFloat32 compiled"
grep -q "tcclFloat32" "$scratch/4b.log" \
    || { cat "$scratch/4b.log"; fail "the error does not name tcclFloat32"; }

echo "bindgen_feature: OK (generated declarations = checked-in ones; drift and a missing include dir fail the build)"
