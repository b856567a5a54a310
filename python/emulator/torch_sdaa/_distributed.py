"""The "tccl" torch.distributed backend on the SDAA emulator: a ProcessGroup whose collectives
call the emulator's libtccl (shared memory between the processes of one host) on the sdaa
tensors' memory, which is host memory on the emulator. Every collective has finished when it
returns, so its Work is complete. As with the real TCCL, only sdaa tensors are accepted.

``init_process_group(backend="tccl")`` makes one: rank 0 creates the communicator's unique id
and shares it through the c10d store; every rank then joins it (tcclCommInitRank), waiting at
most TCCL_EMULATOR_TIMEOUT_S for the others."""

import ctypes

import torch
import torch.distributed as dist
from torch.distributed import ReduceOp

from . import _lib

_STORE_KEY = "tccl_emulator_unique_id"
_UINT8 = 1  # tcclUint8: what byte-moving collectives (broadcast, allgather) send
_DTYPES = {
    torch.int8: 0,
    torch.uint8: 1,
    torch.int32: 2,
    torch.uint32: 3,
    torch.int64: 4,
    torch.uint64: 5,
    torch.float16: 6,
    torch.float32: 7,
    torch.float64: 8,
    torch.bfloat16: 9,
}
_OPS = ((ReduceOp.SUM, 0), (ReduceOp.PRODUCT, 1), (ReduceOp.MAX, 2), (ReduceOp.MIN, 3), (ReduceOp.AVG, 4))


class _UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def _bind(tccl):
    """Declares the libtccl functions the process group calls (once per library)."""
    if hasattr(tccl, "_torch_sdaa_bound"):
        return tccl
    p, sz, i = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
    for name, args in (
        ("tcclGetUniqueId", [ctypes.POINTER(_UniqueId)]),
        ("tcclCommInitRank", [ctypes.POINTER(p), i, _UniqueId, i]),
        ("tcclAllReduce", [p, p, sz, i, i, p, p]),
        ("tcclBroadcast", [p, p, sz, i, i, p, p]),
        ("tcclAllGather", [p, p, sz, i, p, p]),
        ("tcclReduceScatter", [p, p, sz, i, i, p, p]),
        ("tcclCommDestroy", [p]),
    ):
        fn = getattr(tccl, name)
        fn.argtypes, fn.restype = args, i
    tccl.tcclGetErrorString.argtypes, tccl.tcclGetErrorString.restype = [i], ctypes.c_char_p
    tccl._torch_sdaa_bound = True
    return tccl


class _Work(dist.Work):
    """A collective that has already finished (the emulator's collectives are synchronous)."""

    def __init__(self, result):
        super().__init__()
        self._result = result
        self._future = torch.futures.Future()
        self._future.set_result(result)

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True

    def is_success(self):
        return True

    def exception(self):
        return None

    def result(self):
        return self._result

    def get_future(self):
        return self._future


def _unsupported(op, why=""):
    return NotImplementedError(f"the SDAA emulator's tccl has no {op}{why} (modelzoo)")


class ProcessGroupTCCL(dist.ProcessGroup):
    """torch.distributed's "tccl" backend over the emulator's libtccl."""

    def __init__(self, store, rank, size):
        super().__init__(rank, size)
        self._tccl = _bind(_lib.load().tccl)
        uid = _UniqueId()
        if rank == 0:
            self._check(self._tccl.tcclGetUniqueId(ctypes.byref(uid)), "tcclGetUniqueId")
            store.set(_STORE_KEY, bytes(uid.internal))
        else:
            uid.internal = store.get(_STORE_KEY)
        self._comm = ctypes.c_void_p()
        self._check(
            self._tccl.tcclCommInitRank(ctypes.byref(self._comm), size, uid, rank),
            f"tcclCommInitRank(rank {rank} of {size})",
        )

    def getBackendName(self):
        return "tccl"

    # torch.distributed takes a ProcessGroup subclass as the whole group and registers no
    # per-device backend for it, so `init_process_group(..., device_id=sdaa:N)` (FSDP2's
    # example) asked for one and failed ("No backend type associated with device type sdaa").
    # The group is its own backend for sdaa; it connects lazily (no eager split).
    supports_splitting = False

    def _get_backend(self, device):
        if torch.device(device).type != "sdaa":
            raise RuntimeError(f"tccl (SDAA EMULATOR) has no backend for device type {device}")
        return self

    # The C++ group keeps its name in its per-device backends, which this group has none of, so
    # `group_name` (DeviceMesh, FSDP2) would fail with "ProcessGroup name not set".
    def _set_group_name(self, name):
        self._name = name

    @property
    def group_name(self):
        return getattr(self, "_name", "")

    @property
    def _device_types(self):
        # Object collectives (all_gather_object, ...) then use sdaa tensors, as NCCL's use cuda.
        return [torch.device("sdaa")]

    def _check(self, rc, what):
        if rc != 0:
            raise RuntimeError(
                f"tccl (SDAA EMULATOR): {what} failed: {self._tccl.tcclGetErrorString(rc).decode()}"
            )

    @staticmethod
    def _device_tensor(t, op):
        if not isinstance(t, torch.Tensor) or t.device.type != "sdaa" or t.layout != torch.strided:
            where = t.device if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(
                f"tccl {op}: got a tensor on {where}; TCCL communicates dense sdaa tensors only "
                "(move it with .to('sdaa'), or use a gloo group for CPU tensors)"
            )
        return t

    @staticmethod
    def _reduction(t, opts_op, op):
        """(tccl dtype, tccl op) for reducing t with opts_op."""
        code = next((c for r, c in _OPS if opts_op == r), None)
        if code is None:
            name = next((n for n, r in ReduceOp.RedOpType.__members__.items() if opts_op == r), opts_op)
            raise _unsupported(op, f" with ReduceOp.{name}")
        if t.dtype == torch.bool:  # as NCCL: a byte, SUM as MAX (or), PRODUCT as MIN (and)
            if code == 4:
                raise _unsupported(op, " averaging bool tensors")
            return _UINT8, {0: 2, 1: 3}.get(code, code)
        if t.dtype not in _DTYPES:
            raise _unsupported(op, f" for {t.dtype}")
        return _DTYPES[t.dtype], code

    def _allreduce_one(self, t, opts_op, op="allreduce"):
        self._device_tensor(t, op)
        dtype, code = self._reduction(t, opts_op, op)
        c = t.contiguous()
        ptr = c.data_ptr()
        self._check(
            self._tccl.tcclAllReduce(ptr, ptr, c.numel(), dtype, code, self._comm, None),
            "tcclAllReduce",
        )
        if c is not t:
            t.copy_(c)

    def allreduce(self, tensors, opts=None):
        op = opts.reduceOp if opts is not None else ReduceOp.SUM
        for t in tensors:
            self._allreduce_one(t, op)
        return _Work(tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        return self.allreduce(tensors, opts)

    def reduce(self, tensors, opts):
        for t in tensors:
            result = t.clone()
            self._allreduce_one(result, opts.reduceOp, "reduce")
            if self.rank() == opts.rootRank:
                t.copy_(result)
        return _Work(tensors)

    def broadcast(self, tensors, opts):
        for t in tensors:
            self._device_tensor(t, "broadcast")
            c = t.contiguous()
            ptr = c.data_ptr()
            nbytes = c.numel() * c.element_size()
            self._check(
                self._tccl.tcclBroadcast(ptr, ptr, nbytes, _UINT8, opts.rootRank, self._comm, None),
                "tcclBroadcast",
            )
            if c is not t:
                t.copy_(c)
        return _Work(tensors)

    def _gather_into(self, output, input, op):
        """All ranks' `input` bytes, rank order, into the contiguous `output`."""
        src = self._device_tensor(input, op).contiguous()
        self._device_tensor(output, op)
        if output.numel() != self.size() * src.numel() or output.dtype != src.dtype:
            raise ValueError(
                f"tccl {op}: the output must hold world_size ({self.size()}) x the input's "
                f"{src.numel()} {src.dtype} elements, got {output.numel()} {output.dtype}"
            )
        out = output.contiguous()
        nbytes = src.numel() * src.element_size()
        self._check(
            self._tccl.tcclAllGather(src.data_ptr(), out.data_ptr(), nbytes, _UINT8, self._comm, None),
            "tcclAllGather",
        )
        if out is not output:
            output.copy_(out)

    def allgather(self, output_lists, inputs, opts=None):
        for outputs, input in zip(output_lists, inputs):
            if len(outputs) != self.size():
                raise ValueError(
                    f"tccl allgather: expected {self.size()} output tensors (the world size), got {len(outputs)}"
                )
            gathered = torch.empty((self.size(),) + tuple(input.shape), dtype=input.dtype, device=input.device)
            self._gather_into(gathered, input, "allgather")
            for out, part in zip(outputs, gathered):
                out.copy_(part.reshape(out.shape))
        return _Work(output_lists)

    def _allgather_base(self, output, input, opts=None):
        self._gather_into(output, input, "all_gather_into_tensor")
        return _Work([output])

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        for output, input in zip(outputs, inputs):
            self._gather_into(output, input, "all_gather_into_tensor")
        return _Work(outputs)

    def _scatter_reduce(self, output, input, opts_op, op):
        """Reduces every rank's contiguous `input` (world_size blocks) and keeps block `rank`."""
        self._device_tensor(output, op)
        src = self._device_tensor(input, op).contiguous()
        if src.numel() != self.size() * output.numel() or output.dtype != src.dtype:
            raise ValueError(
                f"tccl {op}: the input must hold world_size ({self.size()}) x the output's "
                f"{output.numel()} {output.dtype} elements, got {src.numel()} {src.dtype}"
            )
        dtype, code = self._reduction(output, opts_op, op)
        out = output.contiguous()
        self._check(
            self._tccl.tcclReduceScatter(
                src.data_ptr(), out.data_ptr(), out.numel(), dtype, code, self._comm, None
            ),
            "tcclReduceScatter",
        )
        if out is not output:
            output.copy_(out)

    def reduce_scatter(self, outputs, input_lists, opts):
        for output, inputs in zip(outputs, input_lists):
            if len(inputs) != self.size():
                raise ValueError(
                    f"tccl reduce_scatter: expected {self.size()} input tensors (the world size), got {len(inputs)}"
                )
            for t in inputs:
                self._device_tensor(t, "reduce_scatter")
            flat = torch.cat([t.reshape(-1) for t in inputs])
            self._scatter_reduce(output, flat, opts.reduceOp, "reduce_scatter")
        return _Work(outputs)

    def _reduce_scatter_base(self, output, input, opts):
        self._scatter_reduce(output, input, opts.reduceOp, "reduce_scatter_tensor")
        return _Work([output])

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts):
        for output, input in zip(outputs, inputs):
            self._scatter_reduce(output, input, opts.reduceOp, "reduce_scatter_tensor")
        return _Work(outputs)

    def barrier(self, opts=None):
        token = ctypes.c_int(0)  # an allreduce of one int: every rank must arrive
        ptr = ctypes.cast(ctypes.byref(token), ctypes.c_void_p)
        self._check(self._tccl.tcclAllReduce(ptr, ptr, 1, 2, 0, self._comm, None), "barrier")
        return _Work([])

    # What the emulated TCCL lacks: an error naming it, never a silent no-op.
    def gather(self, *args, **kwargs):
        raise _unsupported("gather")

    def scatter(self, *args, **kwargs):
        raise _unsupported("scatter")

    def alltoall(self, *args, **kwargs):
        raise _unsupported("alltoall")

    def alltoall_base(self, *args, **kwargs):
        raise _unsupported("all_to_all_single (alltoall_base)")

    def allgather_coalesced(self, *args, **kwargs):
        raise _unsupported("allgather_coalesced")

    def send(self, *args, **kwargs):
        raise _unsupported("send (point-to-point)")

    def recv(self, *args, **kwargs):
        raise _unsupported("recv (point-to-point)")

    def recv_anysource(self, *args, **kwargs):
        raise _unsupported("recv from any source (point-to-point)")


def _create(store, rank, size, timeout):
    """torch.distributed's creator. Waits for other ranks are bounded by TCCL_EMULATOR_TIMEOUT_S
    (the emulated TCCL's own limit), not by `timeout`."""
    return ProcessGroupTCCL(store, rank, size)


def register():
    """Makes "tccl" a torch.distributed backend for sdaa devices."""
    if dist.is_available() and "tccl" not in dist.Backend.backend_list:
        dist.Backend.register_backend("tccl", _create, devices=["sdaa"])
