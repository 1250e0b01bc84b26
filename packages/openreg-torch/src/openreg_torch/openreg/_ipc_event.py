"""Interprocess events: ``torch.openreg.Event(interprocess=True)``, as on CUDA.

Such an event is a runtime event created with ``orEventInterprocess``: its state lives in
memory shared with every process that opened its ``ipc_handle()``, so a record in one
process orders the waits (``wait``, ``synchronize``, ``query``) of all. It has no timing.
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
    def _make(cls, device: int, runtime_event: int) -> InterprocessEvent:
        # Skips Event.__new__: the torch.Event underneath is never recorded, every
        # operation goes to the runtime event.
        self = torch.Event.__new__(cls, device=torch.device("openreg", device),
                                   enable_timing=False, blocking=False, interprocess=False)
        self._ipc_event = runtime_event
        self._ipc_device = device
        return self

    @classmethod
    def _create(cls, device: int, blocking: bool) -> InterprocessEvent:
        _lazy_init()
        return cls._make(device, _C._ipc_event_create(device, blocking))

    @classmethod
    def _open(cls, device: int, handle: bytes) -> InterprocessEvent:
        _lazy_init()
        return cls._make(device, _C._ipc_event_open(handle))

    def ipc_handle(self) -> bytes:
        """A handle another process opens with `Event.from_ipc_handle(device, handle)`."""
        return _C._ipc_event_handle(self._ipc_event)

    def _stream(self, stream: torch.Stream | None, caller: str) -> torch.Stream:
        return current_stream(self._ipc_device) if stream is None else _checked(stream, caller)

    def record(self, stream: torch.Stream | None = None) -> None:
        _C._ipc_event_record(self._ipc_event, self._stream(stream, "Event.record").native_handle)

    def wait(self, stream: torch.Stream | None = None) -> None:
        _C._ipc_event_wait(self._ipc_event, self._stream(stream, "Event.wait").native_handle)

    def query(self) -> bool:
        return _C._ipc_event_query(self._ipc_event)

    def synchronize(self) -> None:
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
        return f"<torch.openreg.Event interprocess device=openreg:{self._ipc_device}>"
