"""Interprocess events: ``torch.openreg.Event(interprocess=True)``, as on CUDA.

Such an event is a runtime event created with ``orEventInterprocess``: its state lives in
memory shared with every process that opened its ``ipc_handle()``, so a record in one
process orders the waits (``wait``, ``synchronize``, ``query``) of all. It has no timing.
As a CUDA event does, it takes its device when first needed: its first record's stream,
or the current device if ``ipc_handle()`` comes first. Until then it has never been
recorded: waiting for it returns at once.
"""

from __future__ import annotations

import torch

from .. import _C
from ._lazy import _lazy_init
from .streams import Event, _checked, current_stream

__all__: list[str] = []


class InterprocessEvent(Event):
    """An `Event` other processes can open; created by `Event(interprocess=True)` or
    `Event.from_ipc_handle(device, handle)`."""

    @classmethod
    def _make(cls, blocking: bool) -> InterprocessEvent:
        # Skips Event.__new__: the torch.Event underneath is never recorded, every
        # operation goes to the runtime event.
        self = torch.Event.__new__(cls, device="openreg", enable_timing=False, blocking=False,
                                   interprocess=False)
        self._ipc_event = 0  # the runtime event, once made
        self._ipc_device = None
        self._blocking = blocking
        return self

    @classmethod
    def _create(cls, blocking: bool) -> InterprocessEvent:
        _lazy_init()
        return cls._make(blocking)

    @classmethod
    def _open(cls, device: int, handle: bytes) -> InterprocessEvent:
        _lazy_init()
        self = cls._make(blocking=False)
        self._ipc_event, self._ipc_device = _C._ipc_event_open(handle), device
        return self

    def _made_on(self, device: int) -> int:
        """The runtime event, made on `device` if it does not exist yet."""
        if not self._ipc_event:
            self._ipc_event = _C._ipc_event_create(device, self._blocking)
            self._ipc_device = device
        return self._ipc_event

    @property
    def device(self) -> torch.device | None:
        """The event's device; None until it is first recorded (or shared)."""
        return None if self._ipc_device is None else torch.device("openreg", self._ipc_device)

    def ipc_handle(self) -> bytes:
        """A handle another process opens with `Event.from_ipc_handle(device, handle)`."""
        return _C._ipc_event_handle(self._made_on(torch.openreg.current_device()))

    def record(self, stream: torch.Stream | None = None) -> None:
        stream = current_stream() if stream is None else _checked(stream, "Event.record")
        _C._ipc_event_record(self._made_on(stream.device_index), stream.native_handle)

    def wait(self, stream: torch.Stream | None = None) -> None:
        if self._ipc_event:  # never recorded: nothing to wait for
            stream = current_stream(self._ipc_device) if stream is None else _checked(
                stream, "Event.wait")
            _C._ipc_event_wait(self._ipc_event, stream.native_handle)

    def query(self) -> bool:
        return not self._ipc_event or _C._ipc_event_query(self._ipc_event)

    def synchronize(self) -> None:
        if self._ipc_event:
            _C._ipc_event_synchronize(self._ipc_event)

    def elapsed_time(self, end_event: torch.Event) -> float:
        # ValueError, as CUDAEvent raises for an event made without timing.
        raise ValueError("an interprocess openreg event has no timing (as on CUDA, "
                         "interprocess=True requires enable_timing=False)")

    def __del__(self) -> None:
        event, self._ipc_event = getattr(self, "_ipc_event", 0), 0
        if event:
            try:
                _C._ipc_event_destroy(event)
            except Exception:  # interpreter shutdown, forked child: nothing to release
                pass

    def __repr__(self) -> str:
        return f"<torch.openreg.Event interprocess device={self.device}>"
