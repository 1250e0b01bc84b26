"""Device management, as in ``torch.cuda``."""

from dataclasses import dataclass

from . import _C

__all__ = [
    "DeviceProperties",
    "current_device",
    "device",
    "device_count",
    "get_device_properties",
    "install_fault_handler",
    "ProcessUsage",
    "mem_get_info",
    "process_usage",
    "runtime_version",
    "set_device",
    "stream_priority_range",
    "synchronize",
]


@dataclass(frozen=True)
class DeviceProperties:
    name: str
    total_memory: int
    multi_processor_count: int
    major: int
    minor: int
    memory_alignment: int


def device_count() -> int:
    """Number of devices (``OPENREG_DEVICE_COUNT``)."""
    return _C._get_device_count()


def current_device() -> int:
    """The calling thread's current device."""
    return _C._get_device()


def set_device(device: int) -> None:
    """Set the calling thread's current device."""
    _C._set_device(device)


class device:
    """Context manager that makes ``index`` the current device and restores
    the previous one on exit (``torch.cuda.device``); ``None`` is a no-op."""

    def __init__(self, index: "int | None"):
        self.index = index
        self.previous = None

    def __enter__(self):
        if self.index is not None:
            self.previous = _C._get_device()
            _C._set_device(self.index)
        return self

    def __exit__(self, *exc):
        if self.previous is not None:
            _C._set_device(self.previous)
        return False


def synchronize(index: "int | None" = None) -> None:
    """Wait for all streams of device ``index`` (default: the current one)."""
    with device(index):
        _C._device_synchronize()


def get_device_properties(device: "int | None" = None) -> DeviceProperties:
    return DeviceProperties(**_C._get_device_properties(current_device() if device is None else device))


def mem_get_info() -> "tuple[int, int]":
    """(free, total) bytes of the current device."""
    return _C._mem_get_info()


@dataclass(frozen=True)
class ProcessUsage:
    pid: int
    device_memory: int  # each device's capacity in that process (OPENREG_DEVICE_MEMORY)
    used_bytes: "list[int]"  # device memory the process holds, per device


def process_usage() -> "list[ProcessUsage]":
    """The live processes that have allocated openreg device memory on this machine
    and what each holds per device (``orGetProcessUsage``; what ``openreg-smi`` shows).
    Entries of processes that died are removed. Does not initialise the runtime."""
    return sorted((ProcessUsage(**entry) for entry in _C._get_process_usage()),
                  key=lambda entry: entry.pid)


def stream_priority_range() -> "tuple[int, int]":
    """(least, greatest) stream priority; lower numbers are higher priorities."""
    return _C._device_get_stream_priority_range()


def runtime_version() -> int:
    return _C._runtime_get_version()


def install_fault_handler() -> None:
    """Re-install the device-memory fault diagnostic (e.g. after
    ``faulthandler.enable()`` replaced it)."""
    _C._install_fault_handler()
