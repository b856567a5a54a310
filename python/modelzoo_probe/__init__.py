"""Dump one training step of a plain PyTorch script in the modelzoo dump format.

    import modelzoo_probe
    with modelzoo_probe.dump("dumps/cuda", model=model, step=1, level="op", tensors="stats"):
        loss = criterion(model(x), y); loss.backward(); optimizer.step()

writes ``dumps/cuda/rank<r>/step1/{meta.json,records.jsonl,tensors/}`` for ``modelzoo diff``
(docs/diff.md describes the format and the diff).

Ops are captured at the dispatcher (``TorchDispatchMode``): every aten op the step runs is
seen, whatever name the script imported it under, forward, backward and optimizer alike. The
phase is ``backward`` while the autograd engine runs a node. Module scopes come from global
module forward hooks; a backward op gets the scope of the module whose forward created its
autograd node (matched by the node's sequence number).
"""

import ctypes
import json
import os
import struct
import zlib
from collections import defaultdict
from contextlib import contextmanager

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["dump", "FORMAT", "VERSION"]

FORMAT = "modelzoo-dump"
VERSION = 1
LEVELS = ("op", "module", "mix")
TENSORS = ("stats", "full")

# .npy descr of each dtype written as it is; anything else is written as float64 (bfloat16:
# float32, which holds it exactly).
_NPY = {
    torch.float16: "<f2",
    torch.float32: "<f4",
    torch.float64: "<f8",
    torch.int8: "|i1",
    torch.int16: "<i2",
    torch.int32: "<i4",
    torch.int64: "<i8",
    torch.uint8: "|u1",
    torch.bool: "|b1",
}


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _capturable(t):
    return (
        isinstance(t, torch.Tensor)
        and t.layout == torch.strided
        and t.device.type != "meta"
        and not t.is_complex()
    )


def _host_bytes(t):
    """The tensor's elements as it ran, C order, on the host."""
    t = t.detach().to("cpu").contiguous()
    n = t.numel() * t.element_size()
    return t, (ctypes.string_at(t.data_ptr(), n) if n else b"")


def _stats(t):
    """min, max, mean, l2 over the finite elements in float64 on the host, NaN/Inf counts."""
    h = t.detach().to("cpu", torch.float64).reshape(-1)
    nan = int(torch.isnan(h).sum())
    inf = int(torch.isinf(h).sum())
    if nan or inf:
        h = h[torch.isfinite(h)]
    if h.numel() == 0:
        return None, None, None, None, nan, inf
    return (
        float(h.min()),
        float(h.max()),
        float(h.mean()),
        float(torch.linalg.vector_norm(h)),
        nan,
        inf,
    )


def _write_npy(path, t, data):
    """Write `t` as .npy; `data` is its host bytes (_host_bytes), reused when its dtype has an
    .npy descr."""
    if t.dtype not in _NPY:
        t, data = _host_bytes(t.to(torch.float32 if t.dtype == torch.bfloat16 else torch.float64))
    # repr of a tuple of ints is NumPy's own shape text: (), (5,), (2, 3).
    shape = tuple(int(d) for d in t.shape)
    header = f"{{'descr': '{_NPY[t.dtype]}', 'fortran_order': False, 'shape': {shape!r}, }}"
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(data)


class _Probe(TorchDispatchMode):
    """Records every aten op call's tensors into records.jsonl."""

    def __init__(self, step_dir, level, tensors, scopes):
        super().__init__()
        self.step_dir = step_dir
        self.ops = level in ("op", "mix")
        self.full = tensors == "full"
        self.scopes = scopes
        self.calls = defaultdict(int)
        self.seq = 0
        self.out = open(os.path.join(step_dir, "records.jsonl"), "w", encoding="utf-8")

    def close(self):
        self.out.close()

    def record(self, key, op, call, phase, io, index, scope, t):
        if not _capturable(t):
            return
        host, data = _host_bytes(t)
        mn, mx, mean, l2, nan, inf = _stats(host)
        rec = {
            "key": key,
            "op": op,
            "call": call,
            "phase": phase,
            "io": io,
            "index": index,
            "scope": scope,
            "dtype": _dtype_name(t.dtype),
            "shape": list(t.shape),
            "min": mn,
            "max": mx,
            "mean": mean,
            "l2": l2,
            "nan": nan,
            "inf": inf,
            "checksum": f"crc32:{zlib.crc32(data):08x}",
        }
        if self.full:
            name = f"{self.seq:06d}_{op.split('::')[-1]}.npy"
            _write_npy(os.path.join(self.step_dir, "tensors", name), host, data)
            rec["file"] = f"tensors/{name}"
        self.seq += 1
        self.out.write(json.dumps(rec, allow_nan=False) + "\n")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not self.ops or self.scopes.paused:
            return func(*args, **kwargs)
        op = func._schema.name
        call = self.calls[op]
        self.calls[op] += 1
        node = torch._C._current_autograd_node()
        phase = "forward" if node is None else "backward"
        scope = self.scopes.current() if node is None else self.scopes.of_node(node)
        prefix = f"{op}#{call}.{phase}"
        # Inputs before the call: an in-place op (add_, the optimizer's) changes them.
        inputs = [x for x in pytree.tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor)]
        for i, t in enumerate(inputs):
            self.record(f"{prefix}.input.{i}", op, call, phase, "input", i, scope, t)
        out = func(*args, **kwargs)
        outputs = [x for x in pytree.tree_leaves(out) if isinstance(x, torch.Tensor)]
        for i, t in enumerate(outputs):
            self.record(f"{prefix}.output.{i}", op, call, phase, "output", i, scope, t)
        return out


class _Scopes:
    """Module scopes from global forward hooks: the current one in forward, and the module
    whose forward created an autograd node (by sequence number) in backward."""

    def __init__(self, model):
        self.names = {}
        self.param_scope = {}
        if model is not None:
            for name, m in model.named_modules():
                self.names[id(m)] = name
                for p in m.parameters(recurse=False):
                    self.param_scope[id(p)] = name
        self.stack = []
        self.by_seq = {}
        self.paused = False
        self.module_calls = defaultdict(int)
        self.probe = None
        self.modules = False

    def current(self):
        return self.stack[-1][0] if self.stack else ""

    def of_node(self, node):
        var = getattr(node, "variable", None)
        if var is not None:
            return self.param_scope.get(id(var), "")
        return self.by_seq.get(node._sequence_nr(), "")

    def pre(self, module, args):
        name = self.names.get(id(module))
        if name is not None:
            self.stack.append((name, torch._C._autograd._get_sequence_nr()))

    def post(self, module, args, output):
        name = self.names.get(id(module))
        if name is None or not self.stack or self.stack[-1][0] != name:
            return
        _, start = self.stack.pop()
        for s in range(start, torch._C._autograd._get_sequence_nr()):
            self.by_seq.setdefault(s, name)
        if self.modules and self.probe is not None:
            self.record_module(name, args, output)

    def record_module(self, name, args, output):
        label = name or "root"
        k = self.module_calls[label]
        self.module_calls[label] += 1
        self.paused = True
        try:
            for io, value in (("input", args), ("output", output)):
                leaves = [x for x in pytree.tree_leaves(value) if isinstance(x, torch.Tensor)]
                for i, t in enumerate(leaves):
                    self.probe.record(
                        f"module::{label}#{k}.forward.{io}.{i}",
                        f"module::{label}", k, "forward", io, i, name, t,
                    )
        finally:
            self.paused = False


def _rank(rank):
    if rank is not None:
        return int(rank)
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def _release_graph_tasks(params):
    """Makes autograd's device threads drop the graph tasks of a backward run under the probe.

    A backward on a non-CPU device runs on autograd's device thread, which drops its last
    reference to the finished task a moment after ``backward()`` returned; the task holds the
    probe (a ``TorchDispatchMode``) in its thread-local state, so dropping it takes the GIL, and
    if the interpreter is being finalised by then the process aborts ("terminate called without
    an active exception"). One tiny backward per device, run now without the probe, comes after
    it in the device thread's queue: when it returns, the probe's task is gone.
    """
    devices = {p.device for p in params if p.device.type != "cpu"}
    for device in devices:
        try:
            x = torch.zeros(2, device=device, requires_grad=True)
            (x * 1).backward(torch.ones(2, device=device))
        except Exception:  # noqa: BLE001 - a clean-up must not turn a good dump into a failure
            pass


@contextmanager
def dump(path, model=None, step=0, level="op", tensors="stats", name=None, rank=None):
    """Dump the ops (and/or modules) run inside the ``with`` block as one step.

    path: the dump root; the step goes to ``path/rank<r>/step<step>/``. A directory that
    already holds that rank and step is refused (FileExistsError): a dump never overwrites.
    model: the ``nn.Module`` (module scopes, the model's name and dtype). name: the model's
    name in meta.json (default: the model's class name). level: ``op`` (aten ops), ``module``
    (modules' forward inputs/outputs) or ``mix`` (both). tensors: ``stats`` (statistics per
    tensor) or ``full`` (also each tensor as .npy under tensors/). rank: default
    torch.distributed's rank, else $RANK, else 0.

    meta.json is written when the block ends without an exception: a dump without it did not
    finish, and ``modelzoo diff`` says so.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    if tensors not in TENSORS:
        raise ValueError(f"tensors must be one of {TENSORS}, not {tensors!r}")
    r = _rank(rank)
    step_dir = os.path.join(os.fspath(path), f"rank{r}", f"step{int(step)}")
    os.makedirs(os.path.dirname(step_dir), exist_ok=True)
    try:
        os.mkdir(step_dir)
    except FileExistsError:
        raise FileExistsError(
            f"{step_dir} already holds a dump: modelzoo_probe never overwrites one; "
            "remove it or dump into another directory"
        ) from None
    if tensors == "full":
        os.mkdir(os.path.join(step_dir, "tensors"))
    params = [p for p in (model.parameters() if model is not None else []) if p.is_floating_point()]
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "framework": "pytorch",
        "model": name or (type(model).__name__ if model is not None else None),
        "step": int(step),
        "rank": r,
        "level": level,
        "tensors": tensors,
        "dtype": _dtype_name(params[0].dtype) if params else None,
        "device": str(params[0].device) if params else None,
        "torch_version": torch.__version__,
    }
    scopes = _Scopes(model)
    probe = _Probe(step_dir, level, tensors, scopes)
    scopes.probe = probe
    scopes.modules = level in ("module", "mix")
    hooks = [
        torch.nn.modules.module.register_module_forward_pre_hook(scopes.pre),
        torch.nn.modules.module.register_module_forward_hook(scopes.post),
    ]
    try:
        # The step as a RecordFunction user scope: the SDAA emulator's SDAA_EMU_PERTURB counts
        # op calls from its start, as this dump does. Entered before the probe, so the scope's
        # own ops are not recorded.
        with torch.autograd.profiler.record_function("modelzoo::step"), probe:
            yield step_dir
    finally:
        for h in hooks:
            h.remove()
        probe.close()
        _release_graph_tasks(params)
    tmp = os.path.join(step_dir, ".meta.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=1)
    os.replace(tmp, os.path.join(step_dir, "meta.json"))
