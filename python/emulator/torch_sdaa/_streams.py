"""Streams and events of ``torch.sdaa``, with torch.cuda's interface, over the plugin's device
guard. The emulator runs every op to completion before returning, so each stream is always
idle, waits are free, and an event is complete once recorded: all true, not approximations.
Events made with ``enable_timing=True`` record the host's steady clock, so ``elapsed_time``
measures the real time between two records (in milliseconds)."""

import time

import torch

from ._select import _index, _select, current_device


class Stream(torch.Stream):
    """An sdaa stream: an identity (streams run nothing concurrently on the emulator)."""

    def __new__(cls, device=None, priority=0, **kwargs):
        if "stream_id" in kwargs:  # re-wrapping an existing stream
            return super().__new__(cls, **kwargs)
        return super().__new__(cls, torch.device("sdaa", _index(device)), priority=priority)

    def wait_event(self, event) -> None:
        event.wait(self)

    def wait_stream(self, stream) -> None:
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def __repr__(self):
        return f"<torch.sdaa.Stream device=sdaa:{self.device_index} stream_id={self.stream_id} (EMULATOR)>"


def _wrap(s: torch.Stream) -> Stream:
    return Stream(stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type)


def current_stream(device=None) -> Stream:
    """This thread's current stream on the device."""
    return _wrap(torch.accelerator.current_stream(_index(device)))


def default_stream(device=None) -> Stream:
    """The device's default stream (id 0)."""
    current = torch.accelerator.current_stream(_index(device))
    return Stream(stream_id=0, device_index=current.device_index, device_type=current.device_type)


def set_stream(stream) -> None:
    """Makes `stream` current on its device, and its device current, as torch.cuda.set_stream."""
    if stream is not None:
        torch.accelerator.set_stream(stream)


class StreamContext:
    """Selects a stream (and its device) for a block, like torch.cuda.StreamContext."""

    def __init__(self, stream):
        self.stream = stream
        self.prev_device = None
        self.prev_stream = None

    def __enter__(self):
        if self.stream is None:
            return
        self.prev_device = current_device()
        self.prev_stream = current_stream(self.stream.device_index)
        set_stream(self.stream)

    def __exit__(self, *exc):
        if self.stream is None:
            return False
        set_stream(self.prev_stream)
        _select(self.prev_device)
        return False


def stream(stream) -> StreamContext:
    return StreamContext(stream)


class Event(torch.Event):
    """An sdaa event (torch.cuda.Event's interface)."""

    def __new__(cls, enable_timing=False, blocking=False, interprocess=False):
        if interprocess:
            raise NotImplementedError(
                "torch.sdaa.Event(interprocess=True) is not implemented by the SDAA emulator "
                "(modelzoo): it has no inter-process events"
            )
        event = super().__new__(cls, "sdaa", enable_timing=enable_timing, blocking=blocking)
        event._timing = enable_timing
        event._ns = None
        return event

    def record(self, stream=None) -> None:
        super().record(current_stream() if stream is None else stream)
        # The clock the plugin stamps with (CLOCK_MONOTONIC), for elapsed_time below.
        self._ns = time.perf_counter_ns()

    def wait(self, stream=None) -> None:
        super().wait(current_stream() if stream is None else stream)

    def elapsed_time(self, end_event) -> float:
        """Milliseconds from this event's record to end_event's."""
        if type(end_event) is torch.Event:
            return super().elapsed_time(end_event)
        # torch 2.11's torch.Event.elapsed_time takes exact torch.Event objects only, so two
        # torch.sdaa.Events are timed here, with the same checks as the plugin's.
        if self._ns is None or getattr(end_event, "_ns", None) is None:
            raise RuntimeError(
                "torch.sdaa.Event.elapsed_time: both events must be recorded before "
                "calculating elapsed time"
            )
        if not (self._timing and end_event._timing):
            raise RuntimeError(
                "torch.sdaa.Event.elapsed_time: both events must be created with "
                "enable_timing=True to calculate elapsed time"
            )
        return (end_event._ns - self._ns) / 1e6

    def __repr__(self):
        return f"<torch.sdaa.Event event_id={self.event_id} (EMULATOR)>"
