"""modelzoo port's CPU baseline: a CUDA PyTorch script, unmodified, run on the CPU.

`modelzoo port --baseline-device cpu` (the default on a machine without a GPU) puts the
directory holding this file first on PYTHONPATH for the baseline run only, so Python imports it
at start-up (``sitecustomize``). When the script imports torch, CUDA is mapped onto the CPU:

- devices: every ``cuda`` / ``cuda:N`` device a torch function, factory or ``Tensor.to`` is
  given becomes ``cpu`` (a ``TorchFunctionMode`` of this process's threads); ``Tensor.cuda()``
  / ``Module.cuda()`` keep the tensors where they are; ``pin_memory()`` is the tensor itself;
  ``torch.load`` maps CUDA storages to the CPU;
- ``torch.cuda``: ``is_available`` True, ``device_count`` 1 (``MODELZOO_CPU_BASELINE_DEVICES``),
  ``set_device`` / ``synchronize`` / ``empty_cache`` do what they mean on a synchronous host,
  ``manual_seed`` seeds the CPU generator (the one that now draws the script's random numbers),
  memory statistics are 0 (``memory_stats`` empty), ``Event`` times with the host clock,
  streams are the host's one;
- AMP: ``autocast("cuda")`` becomes ``autocast("cpu")`` with the same dtype (fp16 by default, as
  on CUDA), ``GradScaler("cuda")`` a CPU GradScaler (real loss scaling);
- distributed: backend ``nccl`` becomes ``gloo``; DDP of a CPU module drops ``device_ids``; the
  process groups are released at exit before the interpreter is torn down.

Every run that loads it says so on stderr (``modelzoo port: CPU BASELINE``): its figures are the
CPU's, never a CUDA result. Anything it does not map fails as it would without a GPU, naming
the CUDA call.
"""

import atexit
import gc
import importlib.abc
import importlib.util
import os
import sys
import time

_BANNER = (
    "modelzoo port: CPU BASELINE - this run's CUDA calls are mapped to the CPU "
    "(python/port/sitecustomize.py); its figures are the CPU's, not a CUDA result"
)


def _is_cuda(d):
    """Whether `d` names a CUDA device (a string, a torch.device)."""
    if isinstance(d, str):
        return d == "cuda" or d.startswith("cuda:")
    return type(d).__name__ == "device" and getattr(d, "type", None) == "cuda"


def _patch(torch):
    from torch.overrides import TorchFunctionMode

    cpu = torch.device("cpu")

    def to_cpu(v):
        if _is_cuda(v):
            return cpu
        return v

    tensor_cuda = torch.Tensor.cuda
    pin_memory = torch.Tensor.pin_memory
    is_pinned = torch.Tensor.is_pinned

    class CudaOnCpu(TorchFunctionMode):
        """Rewrites CUDA device arguments to the CPU on the way into every torch function."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is tensor_cuda:
                memory_format = kwargs.get("memory_format")
                return args[0] if memory_format is None else args[0].contiguous(memory_format=memory_format)
            if func is pin_memory:
                return args[0]
            if func is is_pinned:
                return False
            if "device" in kwargs:
                kwargs = dict(kwargs, device=to_cpu(kwargs["device"]))
            if any(_is_cuda(a) for a in args):
                args = tuple(to_cpu(a) for a in args)
            return func(*args, **kwargs)

    mode = CudaOnCpu()
    mode.__enter__()  # for the life of the process (this thread; forked workers inherit it)

    cuda = torch.cuda
    devices = int(os.environ.get("MODELZOO_CPU_BASELINE_DEVICES", "1"))
    cuda.is_available = lambda: True
    cuda.device_count = lambda: devices
    cuda.current_device = lambda: 0
    cuda.set_device = lambda device: None
    cuda.synchronize = lambda device=None: None
    cuda.empty_cache = lambda: None
    cuda.is_initialized = lambda: True
    cuda.init = lambda: None
    cuda.get_device_name = lambda device=None: "CPU (modelzoo port baseline)"
    cuda.get_device_capability = lambda device=None: (0, 0)
    cuda.is_bf16_supported = lambda including_emulation=True: True
    # torch.manual_seed calls these in turn: seed the CPU generator itself, not through it.
    cuda.manual_seed = lambda seed: torch.default_generator.manual_seed(int(seed)) and None
    cuda.manual_seed_all = cuda.manual_seed
    cuda.seed = lambda: torch.default_generator.seed() and None
    cuda.seed_all = cuda.seed
    cuda.get_rng_state = lambda device="cuda": torch.get_rng_state()
    cuda.set_rng_state = lambda state, device="cuda": torch.set_rng_state(state)
    cuda.get_rng_state_all = lambda: [torch.get_rng_state()]
    cuda.set_rng_state_all = lambda states: torch.set_rng_state(states[0])
    for name in ("memory_allocated", "max_memory_allocated", "memory_reserved",
                 "max_memory_reserved"):
        setattr(cuda, name, lambda device=None: 0)
    # Optimizers ask whether a CUDA graph is being captured once CUDA is available: never.
    cuda.is_current_stream_capturing = lambda: False
    cuda.graphs.is_current_stream_capturing = cuda.is_current_stream_capturing
    cuda.memory_stats = lambda device=None: {}
    cuda.memory_summary = lambda device=None, abbreviated=False: "CPU baseline: no CUDA memory"
    for name in ("reset_peak_memory_stats", "reset_max_memory_allocated",
                 "reset_max_memory_cached", "reset_accumulated_memory_stats"):
        setattr(cuda, name, lambda device=None: None)

    class Event:
        """A CUDA event on a synchronous host: `record` reads the clock."""

        def __init__(self, enable_timing=False, blocking=False, interprocess=False):
            self._t = None

        def record(self, stream=None):
            self._t = time.perf_counter()

        def synchronize(self):
            pass

        def wait(self, stream=None):
            pass

        def query(self):
            return True

        def elapsed_time(self, end):
            return (end._t - self._t) * 1000.0

    class Stream:
        """The host's one stream: work is done when the call returns."""

        def __init__(self, device=None, priority=0, **kwargs):
            pass

        def synchronize(self):
            pass

        def wait_stream(self, stream):
            pass

        def wait_event(self, event):
            pass

        def record_event(self, event=None):
            event = event or Event()
            event.record()
            return event

        def query(self):
            return True

    class _StreamContext:
        def __init__(self, stream=None):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    cuda.Event = Event
    cuda.Stream = Stream
    cuda.current_stream = lambda device=None: Stream()
    cuda.default_stream = lambda device=None: Stream()
    cuda.stream = _StreamContext
    cuda.StreamContext = _StreamContext

    # AMP: CUDA's autocast and GradScaler become the CPU's, same dtype.
    autocast = torch.amp.autocast_mode.autocast
    autocast_init = autocast.__init__

    def autocast_on_cpu(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if device_type == "cuda":
            device_type, dtype = "cpu", dtype or torch.float16
        autocast_init(self, device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    autocast.__init__ = autocast_on_cpu
    scaler = torch.amp.grad_scaler.GradScaler
    scaler_init = scaler.__init__

    def scaler_on_cpu(self, device="cuda", *args, **kwargs):
        scaler_init(self, "cpu" if device == "cuda" else device, *args, **kwargs)

    scaler.__init__ = scaler_on_cpu

    # Checkpoints saved on CUDA load on the CPU.
    load = torch.load

    def load_on_cpu(f, map_location=None, *args, **kwargs):
        if map_location is None or _is_cuda(map_location):
            map_location = cpu
        elif isinstance(map_location, dict):
            map_location = {k: ("cpu" if _is_cuda(v) else v) for k, v in map_location.items()}
        return load(f, map_location, *args, **kwargs)

    torch.load = load_on_cpu
    torch.serialization.load = load_on_cpu

    # Distributed: NCCL is Gloo here; DDP over a CPU module takes no device_ids.
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    def gloo(backend):
        if isinstance(backend, str) and "nccl" in backend:
            return "gloo"
        return backend

    init_process_group = dist.init_process_group

    # Gloo's worker threads drop each finished collective, and with it the last reference to a
    # tensor Python made; that needs the GIL, which a thread cannot take once the interpreter is
    # finalising, so the process aborts after its last line ("terminate called without an
    # active exception", pytorch/pytorch#179291) when a worker runs late, as under load. The
    # groups are therefore released at exit while the interpreter is whole: destroyed if the
    # script did not, unreachable modules (DDP's reducer) collected, and then the last Python
    # reference to each group dropped here, which destroys it with the GIL released, so its
    # workers finish what they hold and are joined. Not after an unhandled exception: a worker
    # may then wait on a peer that is gone, and the join with it (until Gloo's timeout).
    groups = []
    failed = []
    excepthook = sys.excepthook

    def note_failure(*exc):
        failed.append(True)
        excepthook(*exc)

    sys.excepthook = note_failure

    def release_groups():
        if failed:
            return
        if dist.is_initialized():
            dist.destroy_process_group()
        gc.collect()
        groups.clear()

    atexit.register(release_groups)

    def init_on_cpu(backend=None, *args, **kwargs):
        out = init_process_group(gloo(backend), *args, **kwargs)
        groups.append(dist.distributed_c10d._get_default_group())
        return out

    dist.init_process_group = init_on_cpu
    new_group = dist.new_group

    def new_group_on_cpu(*args, backend=None, **kwargs):
        group = new_group(*args, backend=gloo(backend), **kwargs)
        groups.append(group)
        return group

    dist.new_group = new_group_on_cpu
    ddp_init = DistributedDataParallel.__init__

    def ddp_on_cpu(self, module, device_ids=None, output_device=None, *args, **kwargs):
        ddp_init(self, module, None, None, *args, **kwargs)

    DistributedDataParallel.__init__ = ddp_on_cpu
    print(_BANNER, file=sys.stderr, flush=True)


class _AfterTorch(importlib.abc.MetaPathFinder):
    """Lets torch import as usual, then maps CUDA onto the CPU before the script goes on."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_patch(module):
            exec_module(module)
            _patch(module)

        spec.loader.exec_module = exec_then_patch
        return spec


sys.meta_path.insert(0, _AfterTorch())
