"""{{name}}: an op library for the sdaa device and the CPU, scaffolded by `modelzoo op new`.

The first ``import {{name}}`` builds the C++ library in csrc/ with
``torch.utils.cpp_extension.load`` (no CUDA needed; ninja and a C++ compiler are) into this
package's own cache, ``{{name}}/.cache/``, and loads it; later imports reuse the build while
the sources are unchanged. Build it ahead of a timed run with ``python -c "import {{name}}"``.

The ops are ``torch.ops.{{name}}.*``, wrapped below. Each dispatches on its inputs' device:
the CPU kernel (csrc/cpu.cpp), or the sdaa kernel (csrc/sdaa.cpp: the PrivateUse1 key of
torch_sdaa and of the kit's SDAA emulator), which is a stub raising a clear error until you
write it. ``scale_add_reference`` is the pure-PyTorch reference ``modelzoo op check`` judges
``scale_add`` against; ``inputs.cases`` are its cases.
"""

import os
import shutil

import torch

__all__ = ["scale_add", "scale_add_reference"]

_HERE = os.path.dirname(os.path.abspath(__file__))
_SOURCES = ["{{name}}.cpp", "cpu.cpp", "sdaa.cpp"]


def _ensure_ninja():
    """cpp_extension.load runs `ninja` from PATH; the pip package `ninja` ships one."""
    if shutil.which("ninja"):
        return
    try:
        import ninja
    except ImportError:
        raise ImportError("{{name}}: building the op library needs ninja: "
                          "`python -m pip install ninja` (or put a ninja on PATH)") from None
    os.environ["PATH"] = ninja.BIN_DIR + os.pathsep + os.environ.get("PATH", "")


def _build_and_load():
    """Builds csrc/ (once per source change) and registers its ops with torch."""
    from torch.utils import cpp_extension

    _ensure_ninja()
    build_dir = os.path.join(_HERE, ".cache", "build-torch-" + torch.__version__)
    os.makedirs(build_dir, exist_ok=True)
    cpp_extension.load(
        name="{{name}}_ops",
        sources=[os.path.join(_HERE, "csrc", s) for s in _SOURCES],
        build_directory=build_dir,
        extra_cflags=["-O2"],
        is_python_module=False,
        verbose=os.environ.get("{{NAME}}_VERBOSE_BUILD") == "1",
    )


_build_and_load()


def scale_add(x, y, alpha=1.0):
    """``x + alpha * y`` by the library's kernel for the inputs' device, with a gradient."""
    return torch.ops.{{name}}.scale_add(x, y, float(alpha))


def scale_add_reference(x, y, alpha=1.0):
    """The pure-PyTorch reference of ``scale_add``."""
    return x + alpha * y
