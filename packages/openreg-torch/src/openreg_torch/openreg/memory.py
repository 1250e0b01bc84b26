"""Device memory statistics, cache control and memory debugging, mirroring
torch.cuda.memory.

The caching allocator derives from c10::DeviceAllocator, so the statistics are thin
wrappers over torch.accelerator.memory with openreg's device-index handling. The
debugging tools (snapshots, the allocation history, the per-process limit) are the
allocator's own, with torch.cuda's names and formats: a dump from _dump_snapshot opens
in torch.cuda._memory_viz and the memory visualiser.
"""

import math
import numbers
import pickle
import sys
import threading
from collections import OrderedDict
from typing import Any

import torch

from .. import _C
from ._lazy import _lazy_init, is_initialized
from ._utils import _device_index, _named_device_index

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
    "memory_stats_as_nested_dict",
    "memory_snapshot",
    "memory_summary",
    "set_per_process_memory_fraction",
    "get_per_process_memory_fraction",
    "MemPool",
    "use_mem_pool",
    "caching_allocator_alloc",
    "caching_allocator_delete",
    "get_allocator_backend",
]


def empty_cache() -> None:
    """Return every cached, unused block of device memory to the device (and the host
    cache's pinned blocks to the OS)."""
    if is_initialized():
        torch._C._accelerator_emptyCache()
        _C._empty_host_cache()


# DOC START: caching-allocator-alloc
# Raw blocks handed out by caching_allocator_alloc, by address: each is a storage of the
# caching allocator's, kept alive until caching_allocator_delete.
_raw_blocks: dict[int, torch.UntypedStorage] = {}
_raw_blocks_lock = threading.Lock()


def caching_allocator_alloc(size: int, device=None, stream=None) -> int:
    """`size` bytes from the caching allocator on `device`, for work on `stream` (the
    device's current stream by default): its address, to free with
    caching_allocator_delete, as torch.cuda's."""
    index = _device_index(device)
    if stream is not None and stream.device != torch.device("openreg", index):
        raise ValueError(f"caching_allocator_alloc: stream {stream} is not on openreg:{index}")
    with torch.openreg.device(index), torch.openreg.stream(stream):
        block = torch.UntypedStorage(size, device=torch.device("openreg", index))
    with _raw_blocks_lock:
        _raw_blocks[block.data_ptr()] = block
    return block.data_ptr()


def caching_allocator_delete(mem_ptr: int) -> None:
    """Return a block from caching_allocator_alloc to the cache."""
    with _raw_blocks_lock:
        block = _raw_blocks.pop(mem_ptr, None)
    if block is None:
        raise ValueError(f"caching_allocator_delete: {mem_ptr:#x} is not an address "
                         "caching_allocator_alloc returned, or it was freed already")
# DOC END: caching-allocator-alloc


def get_allocator_backend() -> str:
    """The device allocator's name, as torch.cuda's: openreg has one, its own caching
    allocator ("native")."""
    return "native"


def memory_stats(device=None) -> OrderedDict[str, Any]:
    """The allocator statistics of `device`, keyed as torch.cuda.memory_stats is; empty
    before openreg is initialised (as torch.cuda's): asking which device is current would
    start the runtime, and a child forked after a memory query could not use openreg."""
    if not is_initialized():
        _named_device_index(device)  # a bad device is still an error
        return OrderedDict()
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


def memory_stats_as_nested_dict(device=None) -> dict[str, Any]:
    """memory_stats() as a nested dictionary ("allocated_bytes" -> "all" -> "current")."""
    result: dict[str, Any] = {}
    for key, value in memory_stats(device).items():
        *path, leaf = key.split(".")
        node = result
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = value
    return result


# DOC START: memory-fraction
def set_per_process_memory_fraction(fraction: float, device=None) -> None:
    """Limit the device memory this process may hold on `device` (allocated plus cached)
    to `fraction` of its capacity. An allocation that would exceed it first returns the
    cache to the device, then raises torch.OutOfMemoryError naming the limit."""
    if not isinstance(fraction, numbers.Real) or isinstance(fraction, bool):
        raise TypeError(f"fraction must be a float in [0, 1], got {type(fraction).__name__}")
    if math.isnan(fraction) or not 0 <= fraction <= 1:
        raise ValueError(f"Invalid memory fraction {fraction}: it must be in [0, 1]")
    index = _device_index(device)
    _C._set_memory_fraction(float(fraction), index)


def get_per_process_memory_fraction(device=None) -> float:
    """The fraction set by set_per_process_memory_fraction (1.0: the whole device)."""
    index = _device_index(device)
    return _C._get_memory_fraction(index)
# DOC END: memory-fraction


def memory_snapshot(mempool_id=None, include_traces: bool = True) -> list[dict[str, Any]]:
    """The segments of every device's cache, as torch.cuda.memory_snapshot returns
    them. openreg's cache never splits a device allocation, so each segment holds one
    block: "active_allocated" (in use), "active_pending_free" (freed, waiting for a
    stream that used it) or "inactive" (cached)."""
    if mempool_id is not None:
        raise ValueError("openreg has no memory pools other than the default one: "
                         "mempool_id must be None")
    return _snapshot()["segments"]


def _snapshot(device=None, augment_with_fx_traces: bool = False) -> dict[str, Any]:
    """The allocator's state and recorded history, in torch.cuda.memory._snapshot()'s
    format: {"segments": [...], "device_traces": [[event, ...] per device]}. Stack
    frames are present only while _record_memory_history records them. Like
    torch.cuda's, it covers every device; before openreg is initialised there is nothing
    to show, and it does not initialise it (a child forked after it can use openreg)."""
    if device is not None:
        _named_device_index(device)  # a bad device is still an error
    if not is_initialized():
        return {"segments": [], "device_traces": [[] for _ in range(_C._get_device_count())]}
    snapshot = _C._memory_snapshot()
    if augment_with_fx_traces:
        from torch._utils import _augment_memory_snapshot_stack_traces

        snapshot = _augment_memory_snapshot_stack_traces(snapshot)
    return snapshot


def _dump_snapshot(filename: str = "dump_snapshot.pickle",
                   augment_with_fx_traces: bool = False) -> None:
    """Pickle _snapshot() to `filename`: what torch.cuda._memory_viz and
    pytorch.org/memory_viz read."""
    snapshot = _snapshot(augment_with_fx_traces=augment_with_fx_traces)
    with open(filename, "wb") as file:
        pickle.dump(snapshot, file)


_RECORD_CONTEXTS = {None: 0, "state": 1, "alloc": 2, "all": 3}  # c10's RecordContext


# DOC START: record-memory-history
def _record_memory_history(enabled: str | None = "all", context: str | None = "all",
                           stacks: str = "all", max_entries: int = sys.maxsize,
                           device=None, clear_history: bool = False) -> None:
    """Record where device memory is allocated, as torch.cuda.memory's does.

    enabled: None stops recording; "state" keeps the stack of each live allocation;
        "all" also keeps a history of alloc/free/segment events (at most `max_entries`,
        the newest). True and False mean "all" and None.
    context: which events keep a stack: None, "state" (live allocations), "alloc"
        (also alloc events), "all" (also frees).
    stacks: "python" (Python and TorchScript frames) or "all" (also C++ frames).
    Recording covers every device, as torch.cuda's does; `device` is only checked.
    """
    if isinstance(enabled, bool):
        enabled = "all" if enabled else None
    if enabled not in (None, "state", "all"):
        raise ValueError(f"enabled must be None, 'state' or 'all', got {enabled!r}")
    if context not in _RECORD_CONTEXTS:
        raise ValueError(f"context must be None, 'state', 'alloc' or 'all', got {context!r}")
    if stacks not in ("python", "all"):
        raise ValueError(f"stacks must be 'python' or 'all', got {stacks!r}")
    if not isinstance(max_entries, int) or isinstance(max_entries, bool) or max_entries < 1:
        raise ValueError(f"max_entries must be a positive int, got {max_entries!r}")
    if device is not None:
        _device_index(device)
    _lazy_init()
    _C._record_memory_history(enabled is not None, enabled == "all",
                              _RECORD_CONTEXTS[context], stacks == "all",
                              min(max_entries, sys.maxsize), clear_history)
# DOC END: record-memory-history


def _format_bytes(count: int) -> str:
    for unit in ("B  ", "KiB", "MiB", "GiB"):
        if abs(count) < 10240 or unit == "GiB":
            return f"{count:>6d} {unit}"
        count //= 1024
    raise AssertionError("unreachable")


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """A readable table of memory_stats(device), laid out as torch.cuda's: current, peak,
    total allocated and total freed, for all blocks and the large/small pools."""
    index = _device_index(device)
    stats = memory_stats(index)
    free, total = mem_get_info(index)
    fraction = get_per_process_memory_fraction(index)
    rows = [
        ("allocated_bytes", "Allocated memory", _format_bytes),
        ("active_bytes", "Active memory", _format_bytes),
        ("requested_bytes", "Requested memory", _format_bytes),
        ("reserved_bytes", "Reserved memory", _format_bytes),
        ("allocation", "Allocations", lambda n: f"{n:>10d}"),
        ("active", "Active allocs", lambda n: f"{n:>10d}"),
        ("segment", "Device segments", lambda n: f"{n:>10d}"),
    ]
    pools = [("all", "")] if abbreviated else [
        ("all", ""), ("large_pool", "  from large pool"), ("small_pool", "  from small pool")]
    lines = [
        "=",
        f" PyTorch openreg memory summary, device openreg:{index}",
        f" capacity {_format_bytes(total).strip()}, free {_format_bytes(free).strip()}, "
        f"per-process fraction {fraction:g}",
        "-",
        f" OOMs: {stats.get('num_ooms', 0)} | device alloc retries: "
        f"{stats.get('num_alloc_retries', 0)} | device allocs/frees: "
        f"{stats.get('num_device_alloc', 0)}/{stats.get('num_device_free', 0)}",
        "=",
        f" {'Metric':<21} | {'Cur Usage':>10} | {'Peak Usage':>10} | "
        f"{'Tot Alloc':>10} | {'Tot Freed':>10} ",
    ]
    for key, name, fmt in rows:
        lines.append("-")
        for pool, suffix in pools:
            label = suffix or name
            values = [stats.get(f"{key}.{pool}.{field}", 0)
                      for field in ("current", "peak", "allocated", "freed")]
            lines.append(f" {label:<21} | " + " | ".join(f"{fmt(v):>10}" for v in values) + " ")
    lines.append("=")
    width = max(len(line) for line in lines)
    # One-character lines are rules across the table.
    lines = [line * width if len(line) == 1 else line.ljust(width) for line in lines]
    return "\n".join(f"|{line}|" for line in lines) + "\n"


# DOC START: mem-pool
_NO_MEM_POOL = (
    "openreg has no MemPool: in torch 2.13 and 2.14 a memory pool is torch.cuda.MemPool "
    "(torch._C._MemPool, built only into CUDA builds of PyTorch, and a CUDACachingAllocator "
    "pool) or torch.xpu.MemPool; there is no device-generic MemPool that a PrivateUse1 "
    "allocator can plug into (torch.accelerator has none), so allocations cannot be "
    "routed to a pool of openreg's allocator through PyTorch's API."
)


class MemPool:
    """Not available for openreg (see the error for why)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(_NO_MEM_POOL)


def use_mem_pool(pool: Any, device=None):
    """Not available for openreg (see the error for why)."""
    raise NotImplementedError(_NO_MEM_POOL)
# DOC END: mem-pool
