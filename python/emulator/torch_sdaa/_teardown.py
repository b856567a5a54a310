"""Autograd's sdaa work released before the interpreter is torn down.

A backward on sdaa runs on autograd's device thread, and that thread drops its last reference
to the finished graph task a moment after ``backward()`` has returned. The task keeps the
thread-local state of the call — a Python ``TorchDispatchMode`` among it — so dropping it takes
the GIL; when the main thread has meanwhile begun finalising the interpreter, Python ends the
device thread inside a C++ destructor and the process aborts ("terminate called without an
active exception", 1-2 of 100 short runs under load). CUDA has the same race in PyTorch. At exit
(before finalisation) each emulated device runs one more tiny backward: the device thread takes
tasks in order, so once it is done, the earlier task has been dropped while Python still runs.
"""

import atexit
import os

import torch

_PID = os.getpid()


def release_graph_tasks(indices):
    """Runs a tiny backward on each ``sdaa:i`` (errors ignored: this is teardown).

    Of a two-element root, which ``modelzoo port``'s shim does not record as a loss (it records
    one-element roots), so the exit adds no step to a recorded run. (Through
    ``torch.autograd.grad`` instead, a fresh-clone gate still aborted once.)"""
    for i in indices:
        try:
            x = torch.zeros(2, device=torch.device("sdaa", i), requires_grad=True)
            (x * 1).backward(torch.ones(2, device=x.device))
        except Exception:  # noqa: BLE001 - nothing at exit may turn into a failure
            pass


def _at_exit():
    from . import _device

    # A forked child (a DataLoader worker) has no device threads of its own to wait for.
    if os.getpid() != _PID or not _device.is_initialized():
        return
    release_graph_tasks(range(_device.device_count()))


def register():
    atexit.register(_at_exit)
