"""The current device and streams, put back after code that changes them (a test)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

__all__ = ["preserved_device_and_streams"]


@contextlib.contextmanager
def preserved_device_and_streams() -> Iterator[None]:
    """On exit, this thread's current openreg device and each device's current stream are
    what they were on entry, however the block changed them or ended."""
    openreg = torch.openreg
    device = openreg.current_device()
    streams = [openreg.current_stream(index) for index in range(openreg.device_count())]
    try:
        yield
    finally:
        for stream in streams:
            openreg.set_stream(stream)  # makes the stream's device current, hence:
        openreg.set_device(device)
