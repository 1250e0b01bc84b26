"""Turning the many ways users name a device into an openreg device index."""

import torch

from .. import _C
from ._lazy import _lazy_init

_DeviceLike = torch.device | str | int | None


def _device_index(device: _DeviceLike, lazy: bool = True) -> int:
    """The index `device` names: an int, "openreg", "openreg:1", torch.device or None
    (the current device). Anything on another device type is a ValueError."""
    index = _named_device_index(device)
    if index is None:
        if lazy:
            _lazy_init()
        return _C._get_device()
    return index


def _named_device_index(device: _DeviceLike) -> int | None:
    """As _device_index, but None where `device` names the current device ("openreg",
    None, -1): checked without starting the runtime, for calls queued until it starts
    (which device is current is known when they run, as torch.cuda's seeding does)."""
    if isinstance(device, str):
        try:
            device = torch.device(device)
        except RuntimeError:  # torch's message lists device types, naming us privateuseone
            raise ValueError(f"Expected an openreg device, got {device!r}: valid are 'openreg' "
                             f"and 'openreg:N', N in 0..{_C._get_device_count() - 1}") from None
    if isinstance(device, torch.device):
        if device.type != "openreg":
            raise ValueError(f"Expected an openreg device, got {device}")
        device = device.index
    if device is None or device == -1:
        return None
    if not isinstance(device, int) or isinstance(device, bool):
        raise TypeError(f"Expected an openreg device index (int), got {type(device).__name__}")
    count = _C._get_device_count()
    if not 0 <= device < count:
        raise ValueError(
            f"Invalid openreg device index {device}: there are {count} openreg devices, "
            f"valid indices are 0..{count - 1}"
        )
    return device
