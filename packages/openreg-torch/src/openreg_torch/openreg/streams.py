"""Streams and events of torch.openreg, mirroring torch.cuda.Stream / torch.cuda.Event.

`Stream` and `Event` subclass the generic `torch.Stream` and `torch.Event`, so they can be
passed wherever PyTorch takes those (`torch.accelerator.set_stream`, `Tensor.record_stream`).
Each thread has a current stream per device; `stream(s)` makes `s` current for a block.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from .. import _C
from ._lazy import _lazy_init
from ._utils import _device_index, _DeviceLike

__all__ = [
    "Stream",
    "Event",
    "StreamContext",
    "stream",
    "current_stream",
    "default_stream",
    "set_stream",
]


class Stream(torch.Stream):
    """An ordered queue of device work on one openreg device.

    Work issued on a stream (copies, kernels, event records) runs in issue order; work on
    different streams is unordered unless ordered with `wait_stream` / `wait_event`.

    Args:
        device: the stream's device; the current device when None.
        priority: lower numbers are higher priorities (see `priority_range()`); values
            outside the range are clamped, as with torch.cuda.Stream.
    """

    # DOC START: python-stream
    def __new__(cls, device: _DeviceLike = None, priority: int = 0, **kwargs) -> Stream:
        if "stream_id" in kwargs:  # wrapping an existing stream (current_stream() & co)
            return super().__new__(cls, **kwargs)
        index = _device_index(device)
        return super().__new__(cls, device=torch.device("openreg", index), priority=priority)

    def wait_event(self, event: torch.Event) -> None:
        """Make all future work submitted to this stream wait for `event`."""
        event.wait(self)

    def wait_stream(self, stream: torch.Stream) -> None:
        """Make all future work submitted to this stream wait for the work submitted to
        `stream` so far. Returns at once: only later work is affected."""
        self.wait_event(stream.record_event())

    def record_event(self, event: torch.Event | None = None) -> torch.Event:
        """Record `event` (a new `Event` when None) on this stream and return it."""
        if event is None:
            event = Event()
        event.record(self)
        return event
    # DOC END: python-stream

    @property
    def priority(self) -> int:
        return _C._stream_priority(self.stream_id, self.device_index, self.device_type)

    @staticmethod
    def priority_range() -> tuple[int, int]:
        """(least, greatest) priority: lower numbers are higher priorities."""
        return tuple(_C._stream_priority_range())

    @property
    def openreg_stream(self) -> int:
        """The runtime's `orStream_t` handle, as an int (like torch.cuda.Stream.cuda_stream)."""
        return self.native_handle

    def __repr__(self) -> str:
        return (f"<torch.openreg.Stream device={self.device} "
                f"openreg_stream={self.openreg_stream:#x}>")


class Event(torch.Event):
    """A synchronisation marker in a stream's work: it completes when the work issued on
    the stream before `record()` has completed.

    Args:
        enable_timing: whether `elapsed_time` can measure the event (default False).
        blocking: accepted for torch.cuda compatibility; waiting always blocks.
        interprocess: whether other processes can open the event (`ipc_handle()`,
            `Event.from_ipc_handle`); requires enable_timing=False, as on CUDA.
    """

    def __new__(cls, enable_timing: bool = False, blocking: bool = False,
                interprocess: bool = False) -> Event:
        if interprocess:
            if enable_timing:
                raise ValueError("an interprocess event cannot time: pass enable_timing=False "
                                 "with interprocess=True (as on CUDA)")
            from ._ipc_event import InterprocessEvent
            return InterprocessEvent._create(blocking)
        return super().__new__(cls, device="openreg", enable_timing=enable_timing,
                               blocking=blocking, interprocess=False)

    @classmethod
    def from_ipc_handle(cls, device: _DeviceLike, handle: bytes) -> Event:
        """Open in this process the interprocess event another process's `ipc_handle()`
        returned; `device` is the event's device."""
        from ._ipc_event import InterprocessEvent
        return InterprocessEvent._open(_device_index(device), handle)

    def ipc_handle(self) -> bytes:
        raise RuntimeError("this openreg event was not created with interprocess=True; "
                           "only such events can be shared with other processes")

    def record(self, stream: torch.Stream | None = None) -> None:
        """Record the event on `stream` (the current stream when None)."""
        super().record(current_stream() if stream is None else _checked(stream, "Event.record"))

    def wait(self, stream: torch.Stream | None = None) -> None:
        """Make future work on `stream` (the current stream when None) wait for the event."""
        # torch.Event.wait silently accepts an int or a CPU stream: check here.
        super().wait(current_stream() if stream is None else _checked(stream, "Event.wait"))

    # DOC START: event-elapsed-time
    def elapsed_time(self, end_event: torch.Event) -> float:
        """Milliseconds between this event and `end_event` completing. Both must have been
        created with `enable_timing=True`, recorded, and completed."""
        if not isinstance(end_event, torch.Event) or end_event.device.type != "openreg":
            raise TypeError(f"expected an openreg event, got {end_event!r}")
        # torch.Event.elapsed_time accepts only exact torch.Event arguments.
        return _C._event_elapsed_time(self.event_id, end_event.event_id,
                                      -1 if self.device.index is None else self.device.index)
    # DOC END: event-elapsed-time

    def __repr__(self) -> str:
        if self.event_id:
            return f"<torch.openreg.Event {self.event_id:#x}>"
        return "<torch.openreg.Event uninitialized>"


def _checked(stream: object, caller: str) -> torch.Stream:
    """`stream` if it is an openreg torch.Stream; otherwise an error naming what it got."""
    if not isinstance(stream, torch.Stream):
        raise TypeError(f"{caller} expects an openreg stream (torch.openreg.Stream, "
                        f"torch.openreg.current_stream(), ...), got {stream!r}")
    if stream.device.type != "openreg":
        raise ValueError(f"{caller} expects an openreg stream, got a stream on {stream.device}")
    return stream


def _wrap(stream_data: tuple[int, int, int]) -> Stream:
    stream_id, device_index, device_type = stream_data
    return Stream(stream_id=stream_id, device_index=device_index, device_type=device_type)


def current_stream(device: _DeviceLike = None) -> Stream:
    """The calling thread's current stream on `device` (the current device when None)."""
    _lazy_init()
    return _wrap(_C._get_current_stream(_device_index(device)))


def default_stream(device: _DeviceLike = None) -> Stream:
    """The default stream of `device` (the current device when None)."""
    _lazy_init()
    return _wrap(_C._get_default_stream(_device_index(device)))


def set_stream(stream: torch.Stream | None) -> None:
    """Make `stream` current on its device, and its device current, for this thread.
    Prefer the `stream()` context manager, which restores both."""
    if stream is None:
        return
    _checked(stream, "set_stream")
    _lazy_init()
    _C._set_stream(stream.stream_id, stream.device_index, stream.device_type)


# DOC START: stream-context
class StreamContext:
    """Context manager that makes `stream` current for a block, then restores the
    previous current streams and device, also when the block raises. A stream on
    another device is made current on that device for the block, and so is its device,
    as with torch.cuda.StreamContext. `None` makes it a no-op."""

    def __init__(self, stream: torch.Stream | None):
        self.stream = stream
        self.src_prev_stream: Stream | None = None
        self.dst_prev_stream: Stream | None = None

    def __enter__(self) -> torch.Stream | None:
        if self.stream is None:
            return None
        self.src_prev_stream = current_stream()
        self.dst_prev_stream = None
        if self.src_prev_stream.device != self.stream.device:
            self.dst_prev_stream = current_stream(self.stream.device)
        set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc: object) -> bool:
        if self.stream is None:
            return False
        if self.dst_prev_stream is not None:
            set_stream(self.dst_prev_stream)
        set_stream(self.src_prev_stream)  # last: its device becomes current again
        return False
# DOC END: stream-context


def stream(stream: torch.Stream | None) -> StreamContext:
    """`with torch.openreg.stream(s):` issues the block's device work on `s`."""
    return StreamContext(None if stream is None else _checked(stream, "stream"))


# DOC START: stream-hold
@contextlib.contextmanager
def _hold(stream: torch.Stream | None = None) -> Iterator[None]:
    """Test helper: `stream` (the current one when None) runs nothing issued inside the
    block, nor after it, until the block ends. Issue only asynchronous work inside
    (pinned non_blocking copies, event records, waits): a kernel or a blocking copy on the
    held stream waits for the stream, so it would wait forever."""
    stream = current_stream() if stream is None else stream
    gate = _C._StreamGate(stream.stream_id, stream.device_index, stream.device_type)
    try:
        yield
    finally:
        gate.open()
# DOC END: stream-hold


def _sleep(ms: int) -> None:
    """Test helper, like torch.cuda._sleep: the current stream is busy for `ms` ms."""
    _lazy_init()
    _C._sleep(ms)
