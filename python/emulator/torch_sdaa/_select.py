"""Which emulated device is current, and the device index every ``torch.sdaa`` call takes:
below both ``_device`` (the ``torch.sdaa`` module) and ``_streams`` (its streams and events),
so that neither imports the other."""

import ctypes

import torch

from . import _lib

_rt = _lib.load()


def _index(device=None):
    """The device index of an int, 'sdaa:i', torch.device or None (the current device)."""
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "sdaa":
            raise ValueError(f"torch.sdaa: expected an sdaa device, got {device}")
        device = device.index
    if device is None:
        return current_device()
    if not isinstance(device, int):
        raise TypeError(f"torch.sdaa: expected a device index, 'sdaa:i' or torch.device, got {device!r}")
    return device


def _checked(device):
    index = _index(device)
    count = device_count()
    if not 0 <= index < count:
        raise RuntimeError(
            f"torch.sdaa (SDAA EMULATOR): invalid device sdaa:{index}; the emulator shows {count} "
            "(SDAA_EMULATOR_DEVICES, SDAA_VISIBLE_DEVICES)"
        )
    return index


def device_count() -> int:
    n = ctypes.c_int()
    _rt.check(_rt.get_device_count(ctypes.byref(n)), "sdaaGetDeviceCount")
    return n.value


def current_device() -> int:
    d = ctypes.c_int()
    _rt.check(_rt.get_device(ctypes.byref(d)), "sdaaGetDevice")
    return d.value


def _select(index: int) -> None:
    """Makes the checked device `index` current on this thread (``set_device`` without its
    bookkeeping: what a stream context restores on exit)."""
    _rt.check(_rt.set_device(_checked(index)), f"sdaaSetDevice({index})")
