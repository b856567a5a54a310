"""DTensor's random ops on the emulated sdaa run as on a CPU mesh (EMULATOR ONLY).

DTensor keeps a device's random state in CUDA's layout — a Philox seed and offset, 16 bytes —
for every device whose module has ``set_rng_state`` (``is_rng_supported_mesh``), and moves the
offset around each random op on a sharded tensor. The emulated sdaa generator is the CPU's
Mersenne Twister (a 5,056-byte state), so FSDP2's parameter init failed on DTensor's
``offset.numel() == 1`` assertion. Here an sdaa mesh is reported as not supporting DTensor's
random ops, as a CPU mesh is: each rank draws from its own generator, which is what the CPU
baseline of ``modelzoo port`` does with the same script. A card's torch_sdaa (Philox, as CUDA)
tracks the offsets instead; the emulator does not claim to.

Patched when ``torch.distributed.tensor`` is first imported (not at ``import torch_sdaa``:
importing DTensor costs start-up time every script would pay)."""

import importlib.abc
import importlib.util
import sys

_MODULE = "torch.distributed.tensor._dispatch"


def _patch():
    random = sys.modules["torch.distributed.tensor._random"]
    dispatch = sys.modules[_MODULE]
    torch_check = random.is_rng_supported_mesh

    def is_rng_supported_mesh(device_mesh):
        if device_mesh.device_type == "sdaa":
            return False
        return torch_check(device_mesh)

    random.is_rng_supported_mesh = is_rng_supported_mesh
    dispatch.is_rng_supported_mesh = is_rng_supported_mesh


class _AfterDispatch(importlib.abc.MetaPathFinder):
    """Lets torch's DTensor dispatcher import as usual, then patches it."""

    def find_spec(self, name, path=None, target=None):
        if name != _MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_patch(module):
            exec_module(module)
            _patch()

        spec.loader.exec_module = exec_then_patch
        return spec


def register():
    if _MODULE in sys.modules:
        _patch()
    else:
        sys.meta_path.insert(0, _AfterDispatch())
