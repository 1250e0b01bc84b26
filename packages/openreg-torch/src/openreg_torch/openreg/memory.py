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
