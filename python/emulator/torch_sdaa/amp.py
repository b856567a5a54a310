"""``torch.sdaa.amp``: torch.cuda.amp's interface for sdaa. Autocast runs the plugin's
AutocastPrivateUse1 kernels, which carry CUDA's cast lists; GradScaler's unscale / inf check /
scale update run on sdaa tensors like every other op."""

import functools

import torch

from ._device import _not_implemented

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(torch.amp.autocast):
    """``torch.autocast("sdaa", ...)`` with torch.cuda.amp.autocast's signature."""

    def __init__(self, enabled: bool = True, dtype: torch.dtype = torch.float16, cache_enabled: bool = True):
        super().__init__("sdaa", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(torch.amp.GradScaler):
    """``torch.amp.GradScaler("sdaa", ...)`` with torch.cuda.amp.GradScaler's signature."""

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        super().__init__(
            "sdaa",
            init_scale=init_scale,
            growth_factor=growth_factor,
            backoff_factor=backoff_factor,
            growth_interval=growth_interval,
            enabled=enabled,
        )


custom_fwd = functools.partial(torch.amp.custom_fwd, device_type="sdaa")
custom_bwd = functools.partial(torch.amp.custom_bwd, device_type="sdaa")


def __getattr__(name):
    if name in torch.cuda.amp.__all__:
        raise _not_implemented("torch.sdaa.amp", name)
    raise AttributeError(f"module 'torch.sdaa.amp' has no attribute {name!r}")
