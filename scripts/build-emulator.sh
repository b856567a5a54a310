#!/usr/bin/env bash
# Build the SDAA emulator (device-sdaa/emulator/) into target/sdaa-emulator/lib64/:
# stand-ins for libsdaart, libtecodnn, libtecoblas, libtccl, libsdpti, libtecodnn_ext,
# libtecorand and the torch plugin libtorch_sdaa.so, and their C headers (the emulator's ABI,
# device-sdaa/emulator/include/) into target/sdaa-emulator/include/ for device-sdaa's `bindgen`
# feature, and the emulator's torch_sdaa Python package (python/emulator/) into
# target/sdaa-emulator/python/, which the project's .venv imports through a .pth file. FOR TESTS
# AND THE DEMO ONLY — it is not SDAA hardware. Use it with SDAA_HOME=target/sdaa-emulator.
#
# libtorch: $LIBTORCH if set, else the torch in .venv (as `make` uses). Rebuilds only what
# changed (make-style timestamps).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$root/device-sdaa/emulator"
out="$root/target/sdaa-emulator/lib64"
inc="$root/target/sdaa-emulator/include"
mkdir -p "$out" "$inc"

if [[ -n "${LIBTORCH:-}" ]]; then
    torch_lib="$LIBTORCH/lib"
    torch_inc="$LIBTORCH/include"
else
    torch_lib="$root/.venv/lib/python3.11/site-packages/torch/lib"
    if [[ ! -d "$torch_lib" ]]; then
        torch_lib="$("$root/.venv/bin/python" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null || true)"
    fi
    torch_inc="$torch_lib/../include"
fi
if [[ ! -f "$torch_lib/libtorch_cpu.so" ]]; then
    echo "build-emulator: libtorch not found (looked in $torch_lib); run 'make setup' or set LIBTORCH" >&2
    exit 1
fi

cflags=(-O2 -fPIC -shared -fvisibility=hidden -Wall -I"$src/include")
headers=("$src"/include/*.h)

# $1 = output, rest = sources that trigger a rebuild, then -- and the compiler command.
needs() {
    local target="$1"; shift
    [[ -f "$target" ]] || return 0
    local f
    for f in "$@"; do [[ "$f" -nt "$target" ]] && return 0; done
    return 1
}

build_c() { # name source [defines...]
    local name="$1" source="$2"; shift 2
    if needs "$out/$name" "$src/$source" "${headers[@]}" "$0"; then
        echo "build-emulator: $name"
        gcc "${cflags[@]}" -Wl,-soname,"$name" "$@" -o "$out/$name.tmp" "$src/$source" -lpthread -lrt
        mv "$out/$name.tmp" "$out/$name"
    fi
}

# Headers first (copied only when changed, so bindgen builds are not retriggered needlessly).
for h in "${headers[@]}"; do
    if needs "$inc/${h##*/}" "$h"; then
        cp "$h" "$inc/${h##*/}.tmp"
        mv "$inc/${h##*/}.tmp" "$inc/${h##*/}"
    fi
done

build_c libsdaart.so sdaart.c
build_c libtccl.so tccl.c
build_c libtecodnn.so versions.c -DEMU_TECODNN
build_c libtecoblas.so versions.c -DEMU_TECOBLAS
build_c libsdpti.so versions.c -DEMU_SDPTI
build_c libtecodnn_ext.so versions.c -DEMU_TECODNN_EXT
build_c libtecorand.so versions.c -DEMU_TECORAND

plugin="$out/libtorch_sdaa.so"
if needs "$plugin" "$src/torch_sdaa_plugin.cpp" "$src/perturb.cpp" "$src/perturb.h" \
    "$src/inventory.cpp" "$src/inventory.h" "$out/libsdaart.so" "$0"; then
    echo "build-emulator: libtorch_sdaa.so (C++ against libtorch, ~1 min)"
    # -DNDEBUG as libtorch's release build: its headers' debug-only checks read state that only
    # a debug libtorch keeps (RecordFunction::inputs() would always fail them).
    g++ -O1 -DNDEBUG -fPIC -shared -std=c++17 -D_GLIBCXX_USE_CXX11_ABI=1 \
        -I"$torch_inc" -I"$torch_inc/torch/csrc/api/include" \
        -Wl,-soname,libtorch_sdaa.so -o "$plugin.tmp" "$src/torch_sdaa_plugin.cpp" "$src/perturb.cpp" \
        "$src/inventory.cpp" \
        -L"$out" -lsdaart -L"$torch_lib" -ltorch_cpu -lc10 \
        -Wl,-rpath,'$ORIGIN' -Wl,-rpath,"$torch_lib"
    mv "$plugin.tmp" "$plugin"
fi
# The torch_sdaa Python package for the emulator (docs/torch_sdaa.md), next to lib64/ where it
# finds the libraries, copied only when changed (like the headers); files gone from the source
# go from the copy.
pysrc="$root/python/emulator/torch_sdaa"
pyout="$root/target/sdaa-emulator/python/torch_sdaa"
mkdir -p "$pyout"
for f in "$pysrc"/*.py; do
    if needs "$pyout/${f##*/}" "$f"; then
        cp "$f" "$pyout/${f##*/}.tmp"
        mv "$pyout/${f##*/}.tmp" "$pyout/${f##*/}"
    fi
done
for f in "$pyout"/*.py; do
    [[ -f "$pysrc/${f##*/}" ]] || rm -f "$f"
done
# Beside it, the tcap_dllogger stand-in (docs/python_logger.md) for ported scripts that import
# Tecorigin's logger, which is not on the package index; it re-exports modelzoo_dllogger.
shim="$root/python/emulator/tcap_dllogger.py"
if needs "${pyout%/torch_sdaa}/tcap_dllogger.py" "$shim"; then
    cp "$shim" "${pyout%/torch_sdaa}/tcap_dllogger.py.tmp"
    mv "${pyout%/torch_sdaa}/tcap_dllogger.py.tmp" "${pyout%/torch_sdaa}/tcap_dllogger.py"
fi
# The project's .venv imports it through a .pth file, which Python appends to sys.path after
# site-packages: a real torch_sdaa installed there is always found first.
if [[ -d "$root/.venv" ]]; then
    for site in "$root"/.venv/lib/python3*/site-packages; do
        [[ -d "$site" ]] || continue
        pth="$site/modelzoo-sdaa-emulator.pth"
        if [[ "$(cat "$pth" 2>/dev/null)" != "${pyout%/torch_sdaa}" ]]; then
            echo "${pyout%/torch_sdaa}" > "$pth.tmp"
            mv "$pth.tmp" "$pth"
        fi
    done
fi
echo "build-emulator: SDAA EMULATOR ready in $out (use SDAA_HOME=${out%/lib64}; torch_sdaa in ${pyout%/torch_sdaa})"
