"""torch_sdaa for modelzoo's SDAA EMULATOR — NOT the vendor's package and NOT SDAA hardware.

``import torch_sdaa`` loads the emulator's libraries (built by scripts/build-emulator.sh next to
this package), registers the "sdaa" device with torch (``torch.device("sdaa", i)``,
``Tensor.sdaa()``, ``torch.sdaa``, ``torch.autocast("sdaa")``, the "tccl" distributed backend)
and prints the vendor's version table with every row marked EMULATOR (TORCH_SDAA_BANNER=0
silences it). It refuses to import where the vendor's torch_sdaa is installed. Every op runs its
CPU kernel on host memory; what the emulator lacks raises an error naming it. See
docs/torch_sdaa.md."""

from . import _lib

_lib.refuse_if_vendor_installed()

import os  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402

_rt = _lib.load()

from . import _device, _distributed, _dtensor, _inventory, _parallel, _teardown, amp, emulator  # noqa: E402,F401

_device.amp = amp
torch._register_device_module("sdaa", _device)
sys.modules["torch.sdaa.amp"] = amp
torch.utils.generate_methods_for_privateuse1_backend(
    for_tensor=True, for_module=True, for_storage=True, for_packed_sequence=True
)
_distributed.register()
_parallel.register()
_dtensor.register()
_inventory.start_from_env()
_teardown.register()

__version__ = _rt.plugin_version
EMULATOR = True

if os.environ.get("TORCH_SDAA_BANNER", "1") != "0":
    from . import _banner  # noqa: E402

    print(_banner.text(_rt), flush=True)
