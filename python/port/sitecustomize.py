"""modelzoo port's run-time shim: the CPU baseline of a CUDA script, and the losses backward sees.

`modelzoo port` puts the directory holding this file first on PYTHONPATH, so Python imports it
at start-up (``sitecustomize``). It never imports torch itself: a meta-path hook waits until
the script imports torch, then does what the environment asks:

``MODELZOO_PORT_CPU_BASELINE=1`` (the baseline run, ``--baseline-device cpu``): CUDA is mapped
onto the CPU, so the original CUDA script runs unmodified. Only the entry points that take a
device are wrapped (the torch factories with a ``device`` argument, enumerated from torch's own
op schemas; ``Tensor.to / cuda / new_* / type / pin_memory``; ``torch.Generator``;
``torch.device`` as a context), so ops that take no device run at full speed:

- devices: a ``torch.device("cuda", i)`` / ``"cuda:1"`` / an int index the script builds stays
  what it is (``device.type == "cuda"``); every entry point given one puts the tensor on the
  CPU, so tensors report ``device.type == "cpu"`` and ``is_cuda`` False. ``Tensor.cuda()`` /
  ``Module.cuda()`` keep tensors where they are; ``pin_memory()`` is the tensor itself and a
  DataLoader's ``pin_memory=True`` pins nothing; ``torch.load`` maps CUDA storages to the CPU;
- ``torch.cuda`` and ``torch.accelerator``: available, the accelerator is ``cuda``; the device
  count is the local world size under torchrun (``LOCAL_WORLD_SIZE``), else
  ``MODELZOO_CPU_BASELINE_DEVICES`` (default 1); the current index is kept (``set_device``,
  ``set_device_index``, ``device(i)``, ``device_index(i)``); ``synchronize`` / ``empty_cache``
  do what they mean on a synchronous host; ``manual_seed`` seeds the CPU generator; memory
  statistics are 0; ``Event`` times with the host clock; streams are the host's one;
- AMP: ``autocast("cuda")`` is ``autocast("cpu")`` with the same dtype (fp16 by default, as on
  CUDA), ``GradScaler("cuda")`` a CPU GradScaler (real loss scaling);
- ``nn.DataParallel`` / ``nn.parallel.data_parallel`` run the module on the CPU as one device
  (``.module`` is kept, so state_dict keys are as on CUDA);
- library code choosing its algorithm by device type takes CUDA's choice where the shim knows
  the branch: torchvision's ``ops.batched_nms`` (per-class NMS above 4000 box coordinates on the
  CPU, one offset NMS up to CUDA's threshold elsewhere: the two can keep other boxes at an IoU
  tie, so the baseline must pick as the original's CUDA run — and the port — do);
- distributed: backend ``nccl`` is ``gloo`` (a ``device_id`` is dropped); DDP of a CPU module
  drops ``device_ids``; ``DeviceMesh("cuda", ...)`` is a CPU mesh; the process groups are
  released at exit before the interpreter is torn down.

Every such run says so on stderr (``modelzoo port: CPU BASELINE``): its figures are the CPU's,
never a CUDA result. A CUDA call it cannot map raises an error starting
``modelzoo port CPU baseline:`` that names the call.

``MODELZOO_PORT_BACKWARD_DIR=DIR`` (both runs): every ``backward()`` on a one-element tensor
(``Tensor.backward`` or ``torch.autograd.backward`` with one root) appends the loss as an
NVIDIA DLLogger line ``DLLL {..., "step": [0, N], "data": {"backward.loss": v}}`` (N: the
0-based count of backward calls in this process) to ``DIR/backward.rank<RANK>.jsonl``, flushed
per line; through ``GradScaler.scale`` the unscaled loss is recorded. At exit
``DIR/meta.rank<RANK>.json`` gets ``{"backward_calls": N, "autocast": bool}`` (autocast: an
fp16/bf16 autocast region was entered enabled). Nothing is mapped unless
``MODELZOO_PORT_CPU_BASELINE=1`` is set too.

``MODELZOO_PORT_SEED=N`` (every run: ``modelzoo port --seed N`` sets it, and ``--recheck`` keeps
it): right after torch is imported,
before the script's own code goes on, ``torch.manual_seed(N)``, ``random.seed(N)`` and numpy's
``np.random.seed(N)`` — a script that seeds nothing (torchvision's detection reference) then
draws the same weights, shuffles and augmentations in every run, so its two baseline runs agree
and the port can be judged step by step. A script that seeds itself re-seeds after it: its own
seed wins. A value that is not an integer in 0..2**32-1 stops the run with an error naming it.

``MODELZOO_PORT_OPS=Class=module:function;…`` (either run; ``modelzoo port --op``): every
``torch.autograd.Function`` subclass named ``Class`` (or exactly ``module:Class``) that a module
of the run defines has its ``apply`` routed to ``module:function`` — a project's custom CUDA op
that cannot be built here (its pure-PyTorch twin on the CPU baseline, the device implementation
on the port). The arguments of ``Class.apply(...)`` are passed by the names of ``Class.forward``'s
parameters when the function takes all its required ones by those names (a twin that drops
``im2col_step``), else the first ones positionally. ``MODELZOO_PORT_OP_STUBS=Ext,…``: extension
modules the project imports but this machine does not have are imported as stubs whose every
attribute raises an error naming the extension (a call the routes do not cover).
``MODELZOO_PORT_OPS_RECORD=DIR``: at exit ``DIR/ops.rank<RANK>.json`` gets
``{"Class": {"impl": "module:function", "calls": N}}``. ``MODELZOO_PORT_OPS_FLOAT64=1`` (the
original's second run): the routed function runs on float64 copies of its floating arguments,
its results cast back, so the two runs' spread measures the op's rounding.
"""

import atexit
import datetime
import gc
import importlib.abc
import importlib.util
import json
import os
import sys
import threading
import time

_BANNER = (
    "modelzoo port: CPU BASELINE - this run's CUDA calls are mapped to the CPU "
    "(python/port/sitecustomize.py); its figures are the CPU's, not a CUDA result"
)
_PREFIX = "modelzoo port CPU baseline:"
_START = time.time()


def _unmappable(call):
    """The error for a CUDA call the shim has no CPU meaning for."""
    return RuntimeError(
        f"{_PREFIX} {call} cannot be mapped to the CPU by the port's shim "
        "(python/port/sitecustomize.py). Get the baseline otherwise: run it on a GPU with "
        "`--baseline-device cuda`, or pass the log of a real CUDA run with `--baseline-log FILE`."
    )


def _is_cuda(d):
    """Whether `d` names a CUDA device (a string, a torch.device)."""
    if isinstance(d, str):
        return d == "cuda" or d.startswith("cuda:")
    return type(d).__name__ == "device" and getattr(d, "type", None) == "cuda"


def _is_index(d):
    """Whether `d` is a bare device index (an int, not a bool), which torch reads as CUDA."""
    return type(d) is int


def _device_count():
    if "LOCAL_WORLD_SIZE" in os.environ and "TORCHELASTIC_RUN_ID" in os.environ:
        return int(os.environ["LOCAL_WORLD_SIZE"])
    return int(os.environ.get("MODELZOO_CPU_BASELINE_DEVICES", "1"))


def _host_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def _patch(torch):
    cpu = torch.device("cpu")

    def dev(v):
        """A device argument with CUDA (a name, a torch.device, an index) replaced by the CPU."""
        if _is_cuda(v) or _is_index(v):
            return cpu
        return v

    def wrap_factory(fn):
        """`fn` with its `device` keyword (or a positional CUDA device) put on the CPU."""

        def factory(*args, **kwargs):
            d = kwargs.get("device")
            if d is not None and (_is_cuda(d) or _is_index(d)):
                kwargs["device"] = cpu
            if kwargs.get("pin_memory"):
                kwargs["pin_memory"] = False
            for i, a in enumerate(args):
                if _is_cuda(a):
                    args = args[:i] + (cpu,) + args[i + 1:]
            return fn(*args, **kwargs)

        factory.__name__ = getattr(fn, "__name__", "factory")
        factory.__qualname__ = getattr(fn, "__qualname__", factory.__name__)
        factory.__doc__ = getattr(fn, "__doc__", None)
        factory.__wrapped__ = fn
        return factory

    # The factories: every aten op with a `device` argument that the torch namespace exposes.
    special = {"Generator", "to", "pin_memory", "is_pinned", "_pin_memory"}
    names = set()
    for schema in torch._C._jit_get_all_schemas():
        if schema.name.startswith("aten::") and any(a.name == "device" for a in schema.arguments):
            names.add(schema.name[len("aten::"):])
    for name in sorted(names - special):
        if name.startswith("fft_") and hasattr(torch.fft, name[4:]):
            setattr(torch.fft, name[4:], wrap_factory(getattr(torch.fft, name[4:])))
        elif callable(getattr(torch, name, None)) and not isinstance(getattr(torch, name), type):
            setattr(torch, name, wrap_factory(getattr(torch, name)))
        if name.startswith("new_") and hasattr(torch.Tensor, name):
            setattr(torch.Tensor, name, wrap_factory(getattr(torch.Tensor, name)))
    torch.Tensor.new_tensor = wrap_factory(torch.Tensor.new_tensor)

    tensor_to = torch.Tensor.to

    def to(self, *args, **kwargs):
        if args and (_is_cuda(args[0]) or _is_index(args[0])):
            args = (cpu,) + args[1:]
        d = kwargs.get("device")
        if d is not None and (_is_cuda(d) or _is_index(d)):
            kwargs["device"] = cpu
        return tensor_to(self, *args, **kwargs)

    to.__doc__ = tensor_to.__doc__
    torch.Tensor.to = to

    def tensor_cuda(self, device=None, non_blocking=False, memory_format=torch.preserve_format):
        if memory_format is torch.preserve_format:
            return self
        return self.contiguous(memory_format=memory_format)

    torch.Tensor.cuda = tensor_cuda
    torch.Tensor.pin_memory = lambda self, device=None: self
    torch.Tensor.is_pinned = lambda self, device=None: False
    tensor_type = torch.Tensor.type

    def type_(self, dtype=None, non_blocking=False, **kwargs):
        if isinstance(dtype, str) and dtype.startswith("torch.cuda."):
            dtype = "torch." + dtype[len("torch.cuda."):]
        elif isinstance(dtype, type) and dtype.__module__ == "torch.cuda":
            dtype = getattr(torch, dtype.__name__)
        if dtype is None:
            return tensor_type(self)
        return tensor_type(self, dtype, non_blocking, **kwargs)

    torch.Tensor.type = type_

    base_generator = torch.Generator

    class GeneratorType(type(base_generator)):
        """Every torch generator (torch.default_generator too) is still a torch.Generator."""

        def __instancecheck__(cls, obj):
            return isinstance(obj, base_generator)

        def __subclasscheck__(cls, sub):
            return issubclass(sub, base_generator)

    class Generator(base_generator, metaclass=GeneratorType):
        """torch.Generator whose CUDA device is the CPU's."""

        def __new__(cls, device="cpu"):
            return super().__new__(cls, dev(device))

    torch.Generator = Generator

    # `with torch.device("cuda"):` and torch.set_default_device("cuda").
    from torch.utils import _device as device_ctx

    context_init = device_ctx.DeviceContext.__init__

    def context_on_cpu(self, device):
        context_init(self, dev(device) if device is not None else device)

    device_ctx.DeviceContext.__init__ = context_on_cpu
    set_default_device = torch.set_default_device
    torch.set_default_device = lambda device: set_default_device(
        dev(device) if device is not None else None)

    # Modules: Module.to / to_empty / cuda go through the wrapped Tensor methods and factories.
    # DataLoader: pinning is a no-op on the CPU; no pinning thread.
    from torch.utils.data import DataLoader

    loader_init = DataLoader.__init__

    def loader_on_cpu(self, *args, **kwargs):
        loader_init(self, *args, **kwargs)
        self.pin_memory = False

    DataLoader.__init__ = loader_on_cpu
    from torch.utils.data._utils import pin_memory as pin_module

    pin_module.pin_memory = lambda data, device=None: data

    # torch.cuda and torch.accelerator.
    state = {"index": 0}

    def current_index():
        return state["index"]

    def set_index(device):
        if isinstance(device, str) or type(device).__name__ == "device":
            device = torch.device(device).index or 0
        if device is not None and device >= 0:
            state["index"] = int(device)

    class device_index:
        """`torch.cuda.device(i)` / `torch.accelerator.device_index(i)`: the current index."""

        def __init__(self, device, /):
            self.idx = device
            self.prev = None

        def __enter__(self):
            if self.idx is not None:
                self.prev = state["index"]
                set_index(self.idx)

        def __exit__(self, *exc):
            if self.prev is not None:
                state["index"] = self.prev
            return False

    class Event:
        """A CUDA event on a synchronous host: `record` reads the clock."""

        def __init__(self, enable_timing=False, blocking=False, interprocess=False, **kwargs):
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
            self.device = torch.device("cuda", current_index())

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

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class StreamContext:
        def __init__(self, stream=None):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class DeviceProperties:
        """What `get_device_properties` reports for the CPU standing in for a GPU."""

        def __init__(self):
            self.name = "CPU (modelzoo port baseline)"
            self.major, self.minor = 0, 0
            self.total_memory = _host_memory()
            self.multi_processor_count = os.cpu_count() or 1
            self.is_integrated = True
            self.is_multi_gpu_board = False

        def __repr__(self):
            return f"_CudaDeviceProperties(name='{self.name}', total_memory={self.total_memory})"

    def zero(*args, **kwargs):
        return 0

    def nothing(*args, **kwargs):
        return None

    def mem_info(*args, **kwargs):
        return (_host_memory(), _host_memory())

    cuda = torch.cuda
    cuda.is_available = lambda: True
    cuda.device_count = _device_count
    cuda.current_device = current_index
    cuda.set_device = set_index
    cuda.device = device_index
    cuda.device_of = lambda obj: device_index(None)
    cuda.synchronize = lambda device=None: None
    cuda.empty_cache = lambda: None
    cuda.ipc_collect = lambda: None
    cuda.is_initialized = lambda: True
    cuda.init = lambda: None
    cuda.get_device_name = lambda device=None: DeviceProperties().name
    cuda.get_device_capability = lambda device=None: (0, 0)
    cuda.get_device_properties = lambda device=None: DeviceProperties()
    cuda.get_arch_list = lambda: []
    cuda.is_bf16_supported = lambda including_emulation=True: True
    cuda.mem_get_info = mem_info
    cuda.set_per_process_memory_fraction = lambda fraction, device=None: None
    cuda.get_per_process_memory_fraction = lambda device=None: 1.0
    cuda.can_device_access_peer = lambda device, peer_device: True
    cuda.set_sync_debug_mode = lambda debug_mode: None
    cuda.get_sync_debug_mode = lambda: 0
    # torch.manual_seed calls these in turn: seed the CPU generator itself, not through it.
    cuda.manual_seed = lambda seed: torch.default_generator.manual_seed(int(seed)) and None
    cuda.manual_seed_all = cuda.manual_seed
    cuda.seed = lambda: torch.default_generator.seed() and None
    cuda.seed_all = cuda.seed
    cuda.initial_seed = lambda: torch.default_generator.initial_seed()
    cuda.get_rng_state = lambda device="cuda": torch.get_rng_state()
    cuda.set_rng_state = lambda state, device="cuda": torch.set_rng_state(state)
    cuda.get_rng_state_all = lambda: [torch.get_rng_state()]
    cuda.set_rng_state_all = lambda states: torch.set_rng_state(states[0])
    for name in ("memory_allocated", "max_memory_allocated", "memory_reserved",
                 "max_memory_reserved", "memory_cached", "max_memory_cached"):
        setattr(cuda, name, zero)
    # Optimizers ask whether a CUDA graph is being captured once CUDA is available: never.
    cuda.is_current_stream_capturing = lambda: False
    cuda.graphs.is_current_stream_capturing = cuda.is_current_stream_capturing
    cuda.memory_stats = lambda device=None: {}
    cuda.memory_summary = lambda device=None, abbreviated=False: "CPU baseline: no CUDA memory"
    for name in ("reset_peak_memory_stats", "reset_max_memory_allocated",
                 "reset_max_memory_cached", "reset_accumulated_memory_stats"):
        setattr(cuda, name, nothing)
    cuda.Event = Event
    cuda.Stream = Stream
    # A side-stream prefetcher (Deformable-DETR's data_prefetcher) marks its batch as used by the
    # current stream: nothing to mark on the host's one stream; a torch.Stream goes through.
    record_stream = torch.Tensor.record_stream
    torch.Tensor.record_stream = lambda self, stream: (
        None if isinstance(stream, Stream) else record_stream(self, stream))
    cuda.current_stream = lambda device=None: Stream()
    cuda.default_stream = lambda device=None: Stream()
    cuda.set_stream = lambda stream: None
    cuda.stream = StreamContext
    cuda.StreamContext = StreamContext
    for name in ("range_push", "range_pop", "mark", "range_start", "range_end"):
        setattr(cuda.nvtx, name, lambda *args, **kwargs: None)

    import contextlib

    cuda.nvtx.range = lambda *args, **kwargs: contextlib.nullcontext()
    # The legacy typed constructors (torch.cuda.FloatTensor(...)) are the CPU's.
    for name in ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
                 "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"):
        setattr(cuda, name, getattr(torch, name))

    # Whatever else in torch.cuda needs the driver starts with _lazy_init: name it there.
    lazy_init = cuda._lazy_init

    def no_cuda():
        caller = sys._getframe(1).f_code.co_name
        raise _unmappable(f"torch.cuda.{caller}()")

    for mod_name, mod in list(sys.modules.items()):
        if mod_name.startswith("torch.cuda") and getattr(mod, "_lazy_init", None) is lazy_init:
            mod._lazy_init = no_cuda

    def graphs_unmappable(name):
        def fail(*args, **kwargs):
            raise _unmappable(f"torch.cuda.{name}")

        return fail

    for name in ("CUDAGraph", "graph", "make_graphed_callables", "graph_pool_handle"):
        setattr(cuda, name, graphs_unmappable(name))

    acc = torch.accelerator
    acc.is_available = lambda: True
    acc.current_accelerator = lambda check_available=False: torch.device("cuda")
    acc.device_count = _device_count
    acc.current_device_index = current_index
    acc.current_device_idx = current_index
    acc.set_device_index = set_index
    acc.set_device_idx = set_index
    acc.device_index = device_index
    acc.get_device_capability = lambda device=None, /: {
        "supported_dtypes": {torch.float32, torch.float64, torch.float16, torch.bfloat16,
                             torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
                             torch.bool, torch.complex64, torch.complex128}}
    acc.current_stream = lambda device=None, /: Stream()
    acc.set_stream = lambda stream: None
    acc.synchronize = lambda device=None, /: None
    acc.empty_cache = lambda: None
    acc.memory_stats = lambda device_index=None, /: {}
    acc.get_memory_info = mem_info
    for name in ("memory_allocated", "max_memory_allocated", "memory_reserved",
                 "max_memory_reserved"):
        setattr(acc, name, zero)
    for name in ("reset_accumulated_memory_stats", "reset_peak_memory_stats"):
        setattr(acc, name, nothing)
    acc_memory = sys.modules.get("torch.accelerator.memory")
    if acc_memory is not None:  # the same functions reached through their module
        for name in ("empty_cache", "memory_stats", "get_memory_info", "memory_allocated",
                     "max_memory_allocated", "memory_reserved", "max_memory_reserved",
                     "reset_accumulated_memory_stats", "reset_peak_memory_stats"):
            if hasattr(acc_memory, name):
                setattr(acc_memory, name, getattr(acc, name))

    # AMP: CUDA's autocast and GradScaler become the CPU's, same dtype.
    autocast = torch.amp.autocast_mode.autocast
    autocast_init = autocast.__init__

    def autocast_on_cpu(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if device_type == "cuda":
            device_type, dtype = "cpu", dtype or torch.float16
        autocast_init(self, device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    autocast.__init__ = autocast_on_cpu
    # The autocast state queries CUDA's code asks (custom_fwd, no-argument forms) are the CPU's.
    is_autocast_enabled = torch.is_autocast_enabled
    get_autocast_dtype = torch.get_autocast_dtype

    def autocast_device(device_type):
        return "cpu" if device_type is None or device_type == "cuda" else device_type

    torch.is_autocast_enabled = lambda device_type=None: is_autocast_enabled(
        autocast_device(device_type))
    torch.get_autocast_dtype = lambda device_type: get_autocast_dtype(autocast_device(device_type))
    torch.get_autocast_gpu_dtype = lambda: get_autocast_dtype("cpu")
    scaler = torch.amp.grad_scaler.GradScaler
    scaler_init = scaler.__init__

    def scaler_on_cpu(self, device="cuda", *args, **kwargs):
        scaler_init(self, "cpu" if device == "cuda" else device, *args, **kwargs)

    scaler.__init__ = scaler_on_cpu

    # Checkpoints saved on CUDA load on the CPU.
    load = torch.load

    def load_on_cpu(f, map_location=None, *args, **kwargs):
        if map_location is None or _is_cuda(map_location) or _is_index(map_location):
            map_location = cpu
        elif isinstance(map_location, dict):
            map_location = {k: ("cpu" if _is_cuda(v) else v) for k, v in map_location.items()}
        return load(f, map_location, *args, **kwargs)

    torch.load = load_on_cpu
    torch.serialization.load = load_on_cpu

    # DataParallel: one device, the CPU; the module runs as is and stays `.module`.
    import torch.nn.parallel.data_parallel  # noqa: F401 (the package's name is the function)

    dp_module = sys.modules["torch.nn.parallel.data_parallel"]
    dp_module._get_available_device_type = lambda: None

    def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                      module_kwargs=None):
        if not isinstance(inputs, tuple):
            inputs = (inputs,) if inputs is not None else ()
        return module(*inputs, **(module_kwargs or {}))

    dp_module.data_parallel = data_parallel
    torch.nn.parallel.data_parallel = data_parallel

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
        if _is_cuda(kwargs.get("device_id")) or _is_index(kwargs.get("device_id")):
            kwargs.pop("device_id")
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
    try:
        from torch.distributed import device_mesh
    except ImportError:  # a torch built without distributed
        device_mesh = None
    if device_mesh is not None and hasattr(device_mesh, "DeviceMesh"):
        mesh_init = device_mesh.DeviceMesh.__init__

        def mesh_on_cpu(self, device_type, *args, **kwargs):
            mesh_init(self, "cpu" if device_type == "cuda" else device_type, *args, **kwargs)

        device_mesh.DeviceMesh.__init__ = mesh_on_cpu
        init_device_mesh = device_mesh.init_device_mesh

        def init_mesh_on_cpu(device_type, *args, **kwargs):
            return init_device_mesh("cpu" if device_type == "cuda" else device_type,
                                    *args, **kwargs)

        device_mesh.init_device_mesh = init_mesh_on_cpu
        dist.device_mesh.init_device_mesh = init_mesh_on_cpu
    _after_import("torchvision.ops.boxes", _batched_nms_as_on_cuda)
    print(_BANNER, file=sys.stderr, flush=True)


def _batched_nms_as_on_cuda(boxes_module):
    """torchvision's ``batched_nms`` picks its algorithm by the boxes' device: per class
    (``_batched_nms_vanilla``) above 4000 coordinates on the CPU, one NMS over class-offset boxes
    (``_batched_nms_coordinate_trick``) up to a larger threshold on CUDA. The two may keep other
    boxes (the offset changes IoUs in the last bits), so a baseline that stands for a CUDA run
    takes CUDA's branch: the threshold is read from the function's own source; when it cannot
    be, nothing is changed."""
    import inspect
    import re

    original = getattr(boxes_module, "batched_nms", None)
    vanilla = getattr(boxes_module, "_batched_nms_vanilla", None)
    trick = getattr(boxes_module, "_batched_nms_coordinate_trick", None)
    if not (original and vanilla and trick):
        return
    try:
        found = re.search(r'"cpu"\s+else\s+([0-9_]+)\s*\)', inspect.getsource(original))
    except (OSError, TypeError):
        found = None
    if not found:
        return
    threshold = int(found.group(1).replace("_", ""))
    import torchvision

    def batched_nms(boxes, scores, idxs, iou_threshold):
        if boxes.numel() > threshold and not torchvision._is_tracing():
            return vanilla(boxes, scores, idxs, iou_threshold)
        return trick(boxes, scores, idxs, iou_threshold)

    batched_nms.__doc__ = original.__doc__
    batched_nms.__wrapped__ = original
    batched_nms._modelzoo_cuda_threshold = threshold
    boxes_module.batched_nms = batched_nms


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``then(module)`` right after the module ``name`` first executes, before its
    importer goes on (so ``from .boxes import batched_nms`` in a package's ``__init__`` gets
    what ``then`` put there)."""

    def __init__(self, name, then):
        self.name = name
        self.then = then

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find else None
            if spec is not None:
                break
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module
        then = self.then

        def exec_then(module):
            exec_module(module)
            try:
                then(module)
            except Exception as e:  # an adaptation must never be what breaks a run
                print(f"modelzoo port: cannot adapt {name}: {e!r}", file=sys.stderr)

        spec.loader.exec_module = exec_then
        return spec


def _after_import(name, then):
    """``then(module)`` once ``name`` is imported: now if it already is, else at its import."""
    if name in sys.modules:
        then(sys.modules[name])
    else:
        sys.meta_path.insert(0, _AfterImport(name, then))


def _dllogger_line(step, value):
    now = time.time()
    stamp = datetime.datetime.fromtimestamp(now).strftime("%Y-%m-%d %H:%M:%S.%f")
    record = {"timestamp": str(now), "datetime": stamp, "elapsedtime": str(now - _START),
              "type": "LOG", "step": [0, step], "data": {"backward.loss": value}}
    # json writes NaN / Infinity / -Infinity as the bare tokens DLLogger's readers take.
    return "DLLL " + json.dumps(record) + "\n"


def _record_backward(torch, directory):
    """Logs the loss of every scalar backward() and, at exit, the count and whether AMP ran."""
    rank = os.environ.get("RANK", "0")
    lock = threading.Lock()
    state = {"calls": 0, "autocast": False, "file": None}
    low = (torch.float16, torch.bfloat16)

    def record(tensors):
        root = tensors
        if isinstance(root, (list, tuple)) and len(root) == 1:
            root = root[0]
        value = None
        if isinstance(root, torch.Tensor) and root.numel() == 1:
            src = getattr(root, "_modelzoo_unscaled", root)
            try:
                value = float(src.detach().float().reshape(()).cpu().item())
            except Exception:  # a tensor subclass that will not give its value: not recorded
                value = None
        with lock:
            step = state["calls"]
            state["calls"] += 1
            if value is None:
                return
            if state["file"] is None:
                path = os.path.join(directory, f"backward.rank{rank}.jsonl")
                try:
                    os.makedirs(directory, exist_ok=True)
                    state["file"] = open(path, "w", encoding="utf-8")
                except OSError as e:
                    # The script goes on; the port finds no losses and says so.
                    print(f"modelzoo port: cannot record backward losses into {path}: {e}",
                          file=sys.stderr)
                    state["file"] = False
            if state["file"]:
                state["file"].write(_dllogger_line(step, value))
                state["file"].flush()

    backward = torch.autograd.backward

    def recording_backward(tensors, *args, **kwargs):
        record(tensors)
        return backward(tensors, *args, **kwargs)

    recording_backward.__doc__ = backward.__doc__
    recording_backward.__wrapped__ = backward
    # Tensor.backward calls torch.autograd.backward: one patch sees both.
    torch.autograd.backward = recording_backward

    scaler = torch.amp.grad_scaler.GradScaler
    scale = scaler.scale

    def scale_and_remember(self, outputs):
        out = scale(self, outputs)
        if isinstance(outputs, torch.Tensor) and isinstance(out, torch.Tensor) \
                and out is not outputs:
            try:
                out._modelzoo_unscaled = outputs
            except (AttributeError, TypeError):
                pass
        return out

    scaler.scale = scale_and_remember

    autocast = torch.amp.autocast_mode.autocast
    enter = autocast.__enter__

    def enter_and_note(self):
        out = enter(self)
        if getattr(self, "_enabled", False) and getattr(self, "fast_dtype", None) in low:
            state["autocast"] = True
        return out

    autocast.__enter__ = enter_and_note

    def write_meta():
        if state["file"]:
            state["file"].close()
        # A launcher (torchrun's agent) or a helper process (a loader worker, a spawned child
        # without RANK) that never ran backward says nothing: the rank's own process does.
        if state["calls"] == 0 and _is_helper():
            return
        try:
            os.makedirs(directory, exist_ok=True)
            path = os.path.join(directory, f"meta.rank{rank}.json")
            tmp = f"{path}.tmp{os.getpid()}"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump({"backward_calls": state["calls"], "autocast": state["autocast"]}, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except OSError as e:
            print(f"modelzoo port: cannot write {directory}/meta.rank{rank}.json: {e}",
                  file=sys.stderr)

    atexit.register(write_meta)


def _is_helper():
    """Whether this process is a launcher or a worker, not a script's own process."""
    try:
        import multiprocessing

        if multiprocessing.parent_process() is not None:
            return True
    except (ImportError, AttributeError):
        pass
    return "torch.distributed.run" in sys.modules and "RANK" not in os.environ


def _seed_from_env():
    """``MODELZOO_PORT_SEED`` as an int, None when unset; a bad value ends the run, named."""
    text = os.environ.get("MODELZOO_PORT_SEED", "").strip()
    if not text:
        return None
    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if not 0 <= seed < 2**32:
        sys.stderr.write(
            f"modelzoo port: MODELZOO_PORT_SEED={text!r} is not a seed: give an integer in "
            "0..4294967295, or unset it\n")
        sys.stderr.flush()
        os._exit(2)
    return seed


def _seed_everything(torch, seed):
    """Seeds torch's default generator (which the emulated sdaa device and the CPU baseline's
    mapped CUDA both draw from), Python's ``random`` and numpy's global generator."""
    import random

    torch.manual_seed(seed)
    random.seed(seed)
    np = sys.modules.get("numpy")
    if np is not None:
        np.random.seed(seed)


class _AfterTorch(importlib.abc.MetaPathFinder):
    """Lets torch import as usual, then patches it before the script goes on."""

    def __init__(self, baseline, backward_dir, seed=None):
        self.baseline = baseline
        self.backward_dir = backward_dir
        self.seed = seed

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
            if self.baseline:
                _patch(module)
            if self.backward_dir:
                try:
                    _record_backward(module, self.backward_dir)
                except Exception as e:  # recording must never be what breaks a run
                    print(f"modelzoo port: cannot record backward losses: {e!r}",
                          file=sys.stderr)
            if self.seed is not None:
                _seed_everything(module, self.seed)

        spec.loader.exec_module = exec_then_patch
        return spec


_baseline = os.environ.get("MODELZOO_PORT_CPU_BASELINE") == "1"
_backward_dir = os.environ.get("MODELZOO_PORT_BACKWARD_DIR") or None
_seed = _seed_from_env()
if _baseline or _backward_dir or _seed is not None:
    sys.meta_path.insert(0, _AfterTorch(_baseline, _backward_dir, _seed))
if os.environ.get("MODELZOO_PORT_OPS") or os.environ.get("MODELZOO_PORT_OP_STUBS"):
    import _modelzoo_port_ops  # beside this file: the --op routes

    _modelzoo_port_ops.install()
