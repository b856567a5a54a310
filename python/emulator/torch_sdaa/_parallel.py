"""``nn.DataParallel`` / ``nn.parallel.data_parallel`` over the emulated devices.

DataParallel finds the sdaa devices by itself (torch's PrivateUse1 support) and runs its
replicas in threads, one per device; only the copies between devices in
``torch.nn.parallel.comm`` (scatter, gather, broadcast) are CUDA-only C++ in torch
(``torch._C._scatter`` ..., which fail with "Found no NVIDIA driver"). For sdaa tensors they are
done here the way torch's C++ does them — chunks of the batch copied to each device (a chunk
already on its device stays a view), the module's tensors broadcast (the source device keeps the
originals), outputs gathered onto the output device — with plain copies, which between emulated
devices are memcpy of host memory. Everything that is not sdaa goes to torch's own functions.
``reduce_add`` (the gradients' way back) is Python in torch and needs nothing.

Autocast: torch's ``parallel_apply`` carries CUDA's autocast state into the replicas' threads
(``torch.is_autocast_enabled()``), not the accelerator's, so under ``autocast("sdaa")`` the
replicas would silently run in fp32; here they run under sdaa's autocast state (enabled, dtype,
cache) as the caller's thread has it, as CUDA replicas do under CUDA autocast."""

import importlib

import torch
from torch._utils import _get_device_index
from torch.nn.parallel import comm

# The modules (torch.nn.parallel's own names for them are the functions they define).
_data_parallel = importlib.import_module("torch.nn.parallel.data_parallel")
_parallel_apply = importlib.import_module("torch.nn.parallel.parallel_apply")

_TORCH = {
    name: getattr(comm, name) for name in ("broadcast", "broadcast_coalesced", "scatter", "gather")
}
_TORCH_PARALLEL_APPLY = _parallel_apply.parallel_apply


def _is_sdaa(t):
    return isinstance(t, torch.Tensor) and t.device.type == "sdaa"


def _sdaa_is_the_accelerator():
    """Whether a CPU tensor scattered by index goes to sdaa (CUDA would take it where it is)."""
    acc = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
    return acc is not None and acc.type == "sdaa"


def _on(tensor, index, non_blocking=True):
    """`tensor` on sdaa:`index`; the tensor itself when it is there already."""
    if tensor.device.type == "sdaa" and tensor.get_device() == index:
        return tensor
    return tensor.to(torch.device("sdaa", index), non_blocking=non_blocking)


def broadcast(tensor, devices=None, *, out=None):
    if not (_is_sdaa(tensor) or any(_is_sdaa(o) for o in out or ())):
        return _TORCH["broadcast"](tensor, devices, out=out)
    if (devices is None) == (out is None):
        raise RuntimeError(
            f"Exactly one of 'devices' and 'out' must be specified, but got devices={devices} and out={out}"
        )
    if out is not None:
        for o in out:
            o.copy_(tensor, non_blocking=True)
        return tuple(out)
    return tuple(_on(tensor, _get_device_index(d)) for d in devices)


def broadcast_coalesced(tensors, devices, buffer_size=10485760):
    if not any(_is_sdaa(t) for t in tensors):
        return _TORCH["broadcast_coalesced"](tensors, devices, buffer_size)
    devices = [_get_device_index(d) for d in devices]
    source = tensors[0].get_device()
    if devices[0] != source:
        raise RuntimeError(
            f"torch_sdaa (SDAA EMULATOR): broadcast_coalesced: the tensors are on sdaa:{source}, "
            f"which must be the first of the devices {devices} (as on CUDA)"
        )
    return [list(tensors)] + [[_on(t, d) for t in tensors] for d in devices[1:]]


def scatter(tensor, devices=None, chunk_sizes=None, dim=0, streams=None, *, out=None):
    to_sdaa = _is_sdaa(tensor) or (tensor.device.type == "cpu" and _sdaa_is_the_accelerator())
    if out is not None:
        to_sdaa = any(_is_sdaa(o) for o in out)
    if not to_sdaa:
        return _TORCH["scatter"](tensor, devices, chunk_sizes, dim, streams, out=out)
    if out is not None:
        if devices is not None or chunk_sizes is not None:
            raise RuntimeError(
                "'devices' and 'chunk_sizes' must not be specified when 'out' is specified"
            )
        chunks = tensor.split([o.size(dim) for o in out], dim)
        for o, c in zip(out, chunks):
            o.copy_(c, non_blocking=True)
        return tuple(out)
    devices = [_get_device_index(d) for d in devices]
    if chunk_sizes is not None:
        chunks = tensor.split(list(chunk_sizes), dim)
    else:
        chunks = tensor.chunk(len(devices), dim)
    return tuple(_on(c, d) for c, d in zip(chunks, devices))


def gather(tensors, dim=0, destination=None, *, out=None):
    if not (any(_is_sdaa(t) for t in tensors) or _is_sdaa(out)):
        return _TORCH["gather"](tensors, dim, destination, out=out)
    if out is not None:
        if destination is not None:
            raise RuntimeError(
                f"'destination' must not be specified when 'out' is specified, but got destination={destination}"
            )
        return torch.cat([t.to(out.device) for t in tensors], dim, out=out)
    index = _get_device_index(destination, allow_cpu=True, optional=True)
    target = torch.device("cpu") if index == -1 else torch.device("sdaa", index)
    return torch.cat([t.to(target, non_blocking=True) for t in tensors], dim)


class _UnderAutocast:
    """A replica called under the caller's sdaa autocast state (in the replica's thread)."""

    def __init__(self, module, dtype, cache_enabled):
        self.module, self.dtype, self.cache_enabled = module, dtype, cache_enabled

    def __call__(self, *args, **kwargs):
        with torch.autocast("sdaa", dtype=self.dtype, cache_enabled=self.cache_enabled):
            return self.module(*args, **kwargs)


def parallel_apply(modules, inputs, kwargs_tup=None, devices=None):
    if not (_sdaa_is_the_accelerator() and torch.is_autocast_enabled("sdaa")):
        return _TORCH_PARALLEL_APPLY(modules, inputs, kwargs_tup, devices)
    dtype, cache = torch.get_autocast_dtype("sdaa"), torch.is_autocast_cache_enabled()
    wrapped = [_UnderAutocast(m, dtype, cache) for m in modules]
    return _TORCH_PARALLEL_APPLY(wrapped, inputs, kwargs_tup, devices)


def register():
    """Routes torch.nn.parallel.comm's copies of sdaa tensors through this module."""
    comm.broadcast = broadcast
    comm.broadcast_coalesced = broadcast_coalesced
    comm.scatter = scatter
    comm.gather = gather
    _parallel_apply.parallel_apply = parallel_apply
    _data_parallel.parallel_apply = parallel_apply
