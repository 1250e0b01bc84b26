"""Device memory statistics and cache control, mirroring torch.cuda.memory.

The caching allocator derives from c10::DeviceAllocator, so these are thin wrappers
over torch.accelerator.memory with openreg's device-index handling.
"""

from collections import OrderedDict
from typing import Any

import torch

from .. import _C
from ._lazy import _lazy_init, is_initialized
from ._utils import _device_index

__all__ = [
    "empty_cache",
    "memory_stats",
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "reset_peak_memory_stats",
    "reset_accumulated_memory_stats",
    "mem_get_info",
    "host_memory_stats",
    "host_memory_stats_as_nested_dict",
    "reset_peak_host_memory_stats",
    "reset_accumulated_host_memory_stats",
]


def empty_cache() -> None:
    """Return every cached, unused block of device memory to the device (and the host
    cache's pinned blocks to the OS)."""
    if is_initialized():
        torch._C._accelerator_emptyCache()
        _C._empty_host_cache()


def memory_stats(device=None) -> OrderedDict[str, Any]:
    """The allocator statistics of `device`, keyed as torch.cuda.memory_stats is."""
    return torch.accelerator.memory.memory_stats(_device_index(device))


def memory_allocated(device=None) -> int:
    """Bytes currently occupied by tensors on `device`."""
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device=None) -> int:
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device=None) -> int:
    """Bytes held by the caching allocator on `device` (allocated plus cached)."""
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device=None) -> int:
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def reset_peak_memory_stats(device=None) -> None:
    torch._C._accelerator_resetPeakStats(_device_index(device))


def reset_accumulated_memory_stats(device=None) -> None:
    torch._C._accelerator_resetAccumulatedStats(_device_index(device))


def mem_get_info(device=None) -> tuple[int, int]:
    """(free, total) bytes of `device` as the device sees them."""
    _lazy_init()
    return torch._C._accelerator_getMemoryInfo(_device_index(device))


def host_memory_stats() -> OrderedDict[str, Any]:
    """The pinned host allocator's statistics, flattened and keyed as
    torch.cuda.host_memory_stats is: "allocations.*" and "allocated_bytes.*" count the
    blocks the cache holds (in use or cached), "active_requests.*" and "active_bytes.*"
    those in use; each with "current", "peak", "allocated" and "freed". "num_host_alloc"
    and "num_host_free" count pinned allocations made and returned, and
    "host_alloc_time.*" / "host_free_time.*" their duration in microseconds. Sizes are
    rounded up to a power of two."""
    result = []

    def flatten(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                flatten(f"{prefix}.{key}" if prefix else key, item)
        else:
            result.append((prefix, value))

    flatten("", host_memory_stats_as_nested_dict())
    return OrderedDict(sorted(result))


def host_memory_stats_as_nested_dict() -> dict[str, Any]:
    """host_memory_stats() as a nested dictionary."""
    return _C._host_memory_stats()


def reset_peak_host_memory_stats() -> None:
    """Reset the "peak" values of host_memory_stats() to the current ones."""
    _C._reset_peak_host_memory_stats()


def reset_accumulated_host_memory_stats() -> None:
    """Reset the "allocated" and "freed" values of host_memory_stats()."""
    _C._reset_accumulated_host_memory_stats()
