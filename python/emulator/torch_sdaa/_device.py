"""``torch.sdaa`` on the SDAA EMULATOR: the ``torch.cuda``-like module the vendor's torch_sdaa
registers, answered by the emulator's runtime (libsdaart) and plugin. NOT SDAA hardware.

What the emulator does not implement raises, naming it (see ``__getattr__``): a ported script
never gets a silent no-op."""

import ctypes

import torch

from . import _lib
from ._select import _checked, _index, current_device, device_count  # noqa: F401
from ._streams import (  # noqa: F401  (the torch.sdaa API)
    Event,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)

_rt = _lib.load()


class EmulatorNotImplementedError(NotImplementedError, AttributeError):
    """What the real torch_sdaa has and the emulator lacks. Also an AttributeError, so that
    ``hasattr(torch.sdaa, name)`` (which torch itself uses to probe backends) is False."""


def _not_implemented(module, name):
    return EmulatorNotImplementedError(
        f"{module}.{name} is not implemented by the SDAA emulator (modelzoo); the real "
        "torch_sdaa mirrors it from torch.cuda. See docs/torch_sdaa.md for what the emulator "
        "covers."
    )


# torch.cuda's public API: the names a real torch_sdaa mirrors.
_MIRRORED = frozenset(torch.cuda.__all__)


def __getattr__(name):
    if name in _MIRRORED:
        raise _not_implemented("torch.sdaa", name)
    raise AttributeError(f"module 'torch.sdaa' has no attribute {name!r}")


def is_available() -> bool:
    return device_count() > 0


# Whether this process has used a device yet (see is_initialized).
_used = False


def set_device(device) -> None:
    """Selects the current device of this thread (a negative index is ignored, as on CUDA)."""
    global _used
    index = _index(device)
    if index >= 0:
        _rt.check(_rt.set_device(_checked(index)), f"sdaaSetDevice({index})")
        _used = True


def is_initialized() -> bool:
    """As CUDA's: False until this process first uses a device — selects one, or allocates on
    any — so that torch code which picks a device only on a fresh process does so on sdaa too
    (DeviceMesh sets the current device from LOCAL_RANK; with the emulator initialised from
    its import, rank 1 of FSDP2's example kept sdaa:0). The libraries themselves are loaded
    when torch_sdaa is imported."""
    global _used
    if not _used:
        _used = any(_memory(i)[1] > 0 for i in range(device_count()))
    return _used


def init() -> None:
    """Marks the device initialised (the libraries are loaded when torch_sdaa is imported)."""
    global _used
    _used = True


def _is_in_bad_fork() -> bool:
    """False: emulated device memory is host memory, which a forked child can use."""
    return False


def synchronize(device=None) -> None:
    """Returns at once, correctly: the emulator runs every op to completion before returning."""
    index = _checked(device)
    with _device_scope(index):
        _rt.check(_rt.device_synchronize(), "sdaaDeviceSynchronize")


class device:
    """Context manager that selects a device, like torch.cuda.device."""

    def __init__(self, device):
        self.idx = _index(device)
        self.prev_idx = -1

    def __enter__(self):
        self.prev_idx = current_device()
        if self.idx >= 0 and self.idx != self.prev_idx:
            set_device(self.idx)

    def __exit__(self, *exc):
        if self.idx >= 0 and self.idx != self.prev_idx:
            set_device(self.prev_idx)
        return False


class device_of(device):
    """Selects the device of a tensor (nothing for a CPU tensor), like torch.cuda.device_of."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.device.type == "sdaa" else -1)


def _device_scope(index):
    """`device`, for the functions below whose parameter named `device` (as in torch.cuda)
    hides the class."""
    return device(index)


class _DeviceProperties:
    """What the emulator knows of a device: its name and memory (SDAA_EMULATOR_MEMORY_MB)."""

    def __init__(self, name, total_memory):
        self.name = name
        self.total_memory = total_memory

    def __repr__(self):
        return (
            f"_SdaaDeviceProperties(name='{self.name}', "
            f"total_memory={self.total_memory // (1 << 20)}MB, EMULATOR)"
        )


def get_device_properties(device=None) -> _DeviceProperties:
    index = _checked(device)
    buf = ctypes.create_string_buffer(1024)
    _rt.check(_rt.get_device_properties(buf, index), f"sdaaGetDeviceProperties({index})")
    return _DeviceProperties(buf.value.decode(), mem_get_info(index)[1])


def get_device_name(device=None) -> str:
    return get_device_properties(device).name


def get_amp_supported_dtype():
    """What torch.autocast("sdaa") accepts: the plugin computes both as tensor cores do."""
    return [torch.float16, torch.bfloat16]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """True: the plugin computes bf16 as it computes fp16 (torch.cuda's signature)."""
    return True


# Memory: the emulator's runtime charges every sdaa tensor's bytes to its device. There is no
# caching allocator, so freed memory returns at once and "reserved" equals "allocated".


def memory_allocated(device=None) -> int:
    """Bytes of the device's live tensors."""
    return _memory(device)[0]


def max_memory_allocated(device=None) -> int:
    """Peak of memory_allocated since the start or reset_peak_memory_stats."""
    return _memory(device)[1]


def memory_reserved(device=None) -> int:
    """Equal to memory_allocated: the emulator has no caching allocator to reserve memory."""
    return memory_allocated(device)


def max_memory_reserved(device=None) -> int:
    """Equal to max_memory_allocated (no caching allocator)."""
    return max_memory_allocated(device)


def reset_peak_memory_stats(device=None) -> None:
    index = _checked(device)
    _rt.check(_rt.reset_peak(index), f"sdaaEmuResetPeak({index})")


def reset_max_memory_allocated(device=None) -> None:
    reset_peak_memory_stats(device)


def empty_cache() -> None:
    """Nothing to release, truly: without a caching allocator freed memory is returned at once."""


def mem_get_info(device=None):
    """(free, total) bytes of the device; total is SDAA_EMULATOR_MEMORY_MB."""
    index = _checked(device)
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    with _device_scope(index):
        _rt.check(_rt.mem_get_info(ctypes.byref(free), ctypes.byref(total)), "sdaaMemGetInfo")
    return free.value, total.value


def _memory(device):
    index = _checked(device)
    current, peak = ctypes.c_size_t(), ctypes.c_size_t()
    _rt.check(
        _rt.memory_stats(index, ctypes.byref(current), ctypes.byref(peak)),
        f"sdaaEmuMemoryStats({index})",
    )
    return current.value, peak.value


# Random numbers: the emulator runs each random op's CPU kernel, which draws from the host's
# default generator (torch.default_generator), so seeding sdaa seeds that generator and the
# RNG state is its state. A CPU run and an emulated run with one seed draw the same numbers.


def manual_seed(seed) -> None:
    """Seeds the host generator the emulated device draws from (all devices share it)."""
    torch.default_generator.manual_seed(int(seed))


def manual_seed_all(seed) -> None:
    manual_seed(seed)


def seed() -> None:
    torch.default_generator.seed()


def seed_all() -> None:
    seed()


def initial_seed() -> int:
    return torch.default_generator.initial_seed()


def get_rng_state(device="sdaa") -> torch.Tensor:
    _checked(device)
    return torch.default_generator.get_state()


def set_rng_state(new_state, device="sdaa") -> None:
    _checked(device)
    torch.default_generator.set_state(new_state)


def get_rng_state_all():
    """One state per device, all the host generator's."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)
