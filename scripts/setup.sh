#!/usr/bin/env bash
# Create .venv with torch==$1 from the Python package index, only when it is missing or at another
# version. A second run finds it and returns in well under a second.
set -euo pipefail
want="$1" venv="$2" python="$3"

# DDP on the CPU: c10d's ProcessGroupGloo header includes gloo's (Debian libgloo-dev). Install
# them when missing and this user may; otherwise say what to install (the build then goes on
# without Gloo, and a CPU DDP run says the same).
gloo_header="${GLOO_INCLUDE_DIR:-/usr/include}/gloo/config.h"
if [[ ! -f $gloo_header ]]; then
    apt=()
    if [[ $(id -u) == 0 ]]; then apt=(apt-get); elif sudo -n true 2>/dev/null; then apt=(sudo -n apt-get); fi
    if command -v apt-get >/dev/null && ((${#apt[@]})); then
        echo "setup: installing libgloo-dev (gloo headers for DDP on the CPU)"
        "${apt[@]}" install -y -q libgloo-dev >/dev/null 2>&1 \
            || { "${apt[@]}" update -q >/dev/null 2>&1 && "${apt[@]}" install -y -q libgloo-dev >/dev/null 2>&1; } \
            || true
    fi
    if [[ ! -f $gloo_header ]]; then
        echo "setup: $gloo_header not found: DDP on the CPU needs the gloo headers; install them (apt-get install libgloo-dev) or set GLOO_INCLUDE_DIR, then rebuild. Continuing without." >&2
    fi
fi

# JPEG decoding (modelzoo-vision): libjpeg-turbo's TurboJPEG API (whole images) and its libjpeg
# API (region decodes), with their pkg-config files (Debian libturbojpeg0-dev, libjpeg-dev), which
# the build links. Install them when missing and this user may; otherwise say what to install
# (the build of modelzoo-vision would fail without them).
if ! pkg-config --exists libturbojpeg libjpeg 2>/dev/null; then
    apt=()
    if [[ $(id -u) == 0 ]]; then apt=(apt-get); elif sudo -n true 2>/dev/null; then apt=(sudo -n apt-get); fi
    jpeg_pkgs=(libturbojpeg0-dev libjpeg-dev pkg-config)
    if command -v apt-get >/dev/null && ((${#apt[@]})); then
        echo "setup: installing ${jpeg_pkgs[*]} (libjpeg-turbo, for decoding image folders)"
        "${apt[@]}" install -y -q "${jpeg_pkgs[@]}" >/dev/null 2>&1 \
            || { "${apt[@]}" update -q >/dev/null 2>&1 && "${apt[@]}" install -y -q "${jpeg_pkgs[@]}" >/dev/null 2>&1; } \
            || true
    fi
    if ! pkg-config --exists libturbojpeg libjpeg 2>/dev/null; then
        echo "setup: libturbojpeg / libjpeg (pkg-config) not found: modelzoo-vision links libjpeg-turbo to decode JPEG files; install them (apt-get install ${jpeg_pkgs[*]}), then rebuild." >&2
    fi
fi

if [[ -n "${LIBTORCH:-}" ]]; then
    if [[ ! -d "$LIBTORCH/lib" || ! -d "$LIBTORCH/include" ]]; then
        echo "setup: LIBTORCH=$LIBTORCH has no lib/ and include/ — point it at an unpacked libtorch $want" >&2
        exit 1
    fi
    exit 0
fi

# DDP on CUDA: device-sdaa's NCCL shim compiles against the CUDA runtime headers of the torch
# wheel's nvidia-* packages, whose crt/ and nv/target parts come in nvidia-cuda-crt and
# nvidia-cuda-cccl (headers only; torch does not depend on them). Install the ones of the
# runtime's major.minor when missing; without them the build goes on with no NCCL shim.
cuda_headers() {
    local site inc runtime
    site=$(compgen -G "$venv/lib/python3*/site-packages" | head -n1) || return 0
    inc="$site/nvidia/cu13/include"
    [[ -f $site/torch/lib/libtorch_cuda.so && -f $inc/cuda_runtime_api.h ]] || return 0
    [[ -f $inc/crt/host_config.h && -f $inc/nv/target ]] && return 0
    runtime=$(compgen -G "$site/nvidia_cuda_runtime-*.dist-info" | head -n1 | sed -E 's/.*runtime-([0-9]+\.[0-9]+).*/\1/')
    [[ $runtime =~ ^[0-9]+\.[0-9]+$ ]] || return 0
    echo "setup: installing nvidia-cuda-crt and nvidia-cuda-cccl ${runtime}.* (CUDA headers for the NCCL shim)"
    "$venv/bin/python" -m pip install --disable-pip-version-check -q --no-deps \
        "nvidia-cuda-crt==${runtime}.*" "nvidia-cuda-cccl==${runtime}.*" >"$venv/pip-cuda-headers.log" 2>&1 \
        || echo "setup: could not install the CUDA headers (pip's output: $venv/pip-cuda-headers.log): DDP on CUDA will be unavailable in this build. Continuing without." >&2
}

# The kit's Python package (python/: modelzoo_probe, the capture for `modelzoo diff`,
# modelzoo_dllogger, the tcap_dllogger API, and modelzoo_opcheck, `modelzoo op check`'s harness), installed into the venv as a plain (not editable)
# package, again only when its sources changed since the last install.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
install_probe() {
    local stamp="$venv/.modelzoo_kit.sha256" sum
    sum=$(cat "$root/python/pyproject.toml" "$root"/python/modelzoo_probe/*.py "$root"/python/modelzoo_dllogger/*.py "$root"/python/modelzoo_opcheck/*.py | sha256sum | cut -d' ' -f1)
    if [[ -f $stamp && $(<"$stamp") == "$sum" ]] \
        && compgen -G "$venv/lib/python3*/site-packages/modelzoo_kit-*.dist-info" >/dev/null; then
        return 0
    fi
    echo "setup: installing the kit's Python package (modelzoo_probe, modelzoo_dllogger, modelzoo_opcheck) into $venv"
    local log="$venv/pip-install-modelzoo_kit.log"
    # The package was called modelzoo_probe before it held the logger too: drop that install.
    if compgen -G "$venv/lib/python3*/site-packages/modelzoo_probe-*.dist-info" >/dev/null; then
        "$venv/bin/python" -m pip uninstall --disable-pip-version-check -q -y modelzoo_probe >/dev/null 2>&1 || true
    fi
    if ! "$venv/bin/python" -m pip install --disable-pip-version-check -q --no-deps \
        --force-reinstall "$root/python" >"$log" 2>&1; then
        echo "setup: could not install the kit's Python package from $root/python into $venv (pip's output: $log)" >&2
        exit 1
    fi
    rm -rf "$root/python/build" "$root"/python/*.egg-info
    echo "$sum" >"$stamp"
}

# The reference implementations the model tests compare against (python/requirements-reference.txt),
# installed next to the pinned torch, again only when that file changed since the last install.
install_reference() {
    local req="$root/python/requirements-reference.txt" stamp="$venv/.reference.sha256" sum
    sum=$(sha256sum "$req" | cut -d' ' -f1)
    [[ -f $stamp && $(<"$stamp") == "$sum" ]] && return 0
    echo "setup: installing the reference implementations ($req) into $venv"
    local log="$venv/pip-install-reference.log"
    if ! "$venv/bin/python" -m pip install --disable-pip-version-check -q "torch==$want" -r "$req" >"$log" 2>&1; then
        echo "setup: could not install $req into $venv (pip's output: $log)" >&2
        exit 1
    fi
    echo "$sum" >"$stamp"
}

# Fast path: the venv's site-packages already holds torch-$want's dist-info.
if compgen -G "$venv/lib/python3*/site-packages/torch-$want.dist-info" >/dev/null \
    && [[ -x "$venv/bin/python" ]]; then
    cuda_headers
    install_probe
    install_reference
    exit 0
fi

echo "setup: installing torch==$want into $venv (first time: a few minutes)"
if [[ ! -x "$venv/bin/python" ]]; then
    "$python" -m venv "$venv"
fi
pip_log="$venv/pip-install.log"
if ! "$venv/bin/python" -m pip install --disable-pip-version-check -q "torch==$want" >"$pip_log" 2>&1; then
    cat >&2 <<MSG
setup: could not install torch==$want from the Python package index into $venv
       (tried: $venv/bin/python -m pip install torch==$want; pip's output: $pip_log).
       To use an existing libtorch $want instead, unpack it and run:
           make <target> LIBTORCH=/path/to/libtorch
MSG
    exit 1
fi
"$venv/bin/python" - "$want" <<'PY'
import sys, torch
got = torch.__version__.split("+")[0]
if got != sys.argv[1]:
    sys.exit(f"setup: torch {torch.__version__} installed, {sys.argv[1]} required")
PY
cuda_headers
install_probe
install_reference
