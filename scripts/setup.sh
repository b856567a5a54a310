#!/usr/bin/env bash
# Create .venv with torch==$1 from the Python package index, only when it is missing or at another
# version. A second run finds it and returns in well under a second.
set -euo pipefail
want="$1" venv="$2" python="$3"

if [[ -n "${LIBTORCH:-}" ]]; then
    if [[ ! -d "$LIBTORCH/lib" || ! -d "$LIBTORCH/include" ]]; then
        echo "setup: LIBTORCH=$LIBTORCH has no lib/ and include/ — point it at an unpacked libtorch $want" >&2
        exit 1
    fi
    exit 0
fi

# Fast path: the venv's site-packages already holds torch-$want's dist-info.
if compgen -G "$venv/lib/python3*/site-packages/torch-$want.dist-info" >/dev/null \
    && [[ -x "$venv/bin/python" ]]; then
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
