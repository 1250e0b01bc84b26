"""Streams and events, as in ``torch.cuda``."""

import atexit
import threading

from . import _C
from .device import device

__all__ = ["Event", "Stream"]

_drain_registered = False
_drain_lock = threading.Lock()


def _drain_at_exit() -> None:
    # Python host functions still queued at exit would need the GIL while the
    # interpreter shuts down; run them first.
    try:
        for index in range(_C._get_device_count()):
            with device(index):
                _C._device_synchronize()
    except Exception:  # the runtime is unusable (forked child): nothing queued
        pass


def _register_drain() -> None:
    global _drain_registered
    with _drain_lock:
        if not _drain_registered:
            atexit.register(_drain_at_exit)
            _drain_registered = True


class Stream:
    """An ordered work queue with its own worker thread.

    ``Stream()`` creates a stream on the current device. ``Stream.default()``
    stands for handle 0: the default stream of whatever device is current
    when it is used. Workers do not preempt each other; priority is recorded.
    """

    def __init__(self, priority: int = 0, *, _handle: "int | None" = None):
        if _handle is None:
            self._handle = _C._stream_create_with_priority(0, priority)
            self._owned = True
        else:
            self._handle = _handle
            self._owned = False

    @classmethod
    def default(cls) -> "Stream":
        return cls(_handle=0)

    @property
    def handle(self) -> int:
        return self._handle

    @property
    def device(self) -> int:
        return _C._stream_get_device(self._handle)

    @property
    def priority(self) -> int:
        return _C._stream_get_priority(self._handle)

    def query(self) -> bool:
        """True when all work issued so far has completed."""
        return _C._stream_query(self._handle)

    def synchronize(self) -> None:
        _C._stream_synchronize(self._handle)

    def wait_event(self, event: "Event") -> None:
        """Later work on this stream waits for ``event``'s recorded work."""
        _C._stream_wait_event(self._handle, event.handle)

    def wait_stream(self, stream: "Stream") -> None:
        """Later work on this stream waits for everything issued on ``stream``."""
        event = Event()
        event.record(stream)
        self.wait_event(event)

    def record_event(self, event: "Event | None" = None) -> "Event":
        event = Event() if event is None else event
        event.record(self)
        return event

    def launch_host_func(self, fn) -> None:
        """Queue ``fn()`` to run on the stream's worker, in stream order.
        Exceptions it raises go to ``sys.unraisablehook``."""
        _register_drain()
        _C._launch_host_func(self._handle, fn)

    def launch_kernel(self, fn):
        """Run ``fn()`` on this thread in stream order (after earlier work,
        before later work); its exception propagates."""
        _C._launch_kernel(self._handle, fn)

    def destroy(self) -> None:
        """Let pending work finish, then release the stream."""
        if self._owned:
            self._owned = False
            _C._stream_destroy(self._handle)

    def __del__(self):
        try:
            self.destroy()
        except Exception:
            pass

    def __eq__(self, other):
        return isinstance(other, Stream) and other._handle == self._handle

    def __hash__(self):
        return hash(self._handle)

    def __repr__(self):
        return f"<openreg_runtime.Stream handle={self._handle:#x}>"


class Event:
    """A marker in a stream's work. ``enable_timing`` as in ``torch.cuda.Event``.

    ``interprocess=True`` makes an event other processes can open from
    ``ipc_handle()`` with ``Event.from_ipc_handle``: recording it in one
    process and waiting on it in another orders their work. Such an event
    has no timing.
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False, *, _handle: "int | None" = None):
        if _handle is not None:
            self._handle = _handle
            return
        flags = (0 if enable_timing else 0x2) | (0x1 if blocking else 0) | (0x4 if interprocess else 0)
        self._handle = _C._event_create_with_flags(flags)

    @classmethod
    def from_ipc_handle(cls, handle: bytes) -> "Event":
        """This process's view of another process's interprocess event."""
        return cls(_handle=_C._ipc_open_event_handle(handle))

    def ipc_handle(self) -> bytes:
        """A handle other processes can open with ``Event.from_ipc_handle``."""
        return _C._ipc_get_event_handle(self._handle)

    @property
    def handle(self) -> int:
        return self._handle

    def record(self, stream: "Stream | None" = None) -> None:
        _C._event_record(self._handle, 0 if stream is None else stream.handle)

    def wait(self, stream: "Stream | None" = None) -> None:
        (Stream.default() if stream is None else stream).wait_event(self)

    def query(self) -> bool:
        return _C._event_query(self._handle)

    def synchronize(self) -> None:
        _C._event_synchronize(self._handle)

    def elapsed_time(self, end: "Event") -> float:
        """Milliseconds from this event to ``end`` (both recorded with timing)."""
        return _C._event_elapsed_time(self._handle, end.handle)

    def destroy(self) -> None:
        if self._handle:
            handle, self._handle = self._handle, 0
            _C._event_destroy(handle)

    def __del__(self):
        try:
            self.destroy()
        except Exception:
            pass

    def __repr__(self):
        return f"<openreg_runtime.Event handle={self._handle:#x}>"
