"""The pinned host allocator: PyTorch's CachingHostAllocatorImpl over orMallocHost.

A freed pinned block is reused at once when no asynchronous copy used it, and only after
the copies' streams have passed the free otherwise. Pending copies are made with `_hold`
(the stream provably runs nothing until the block ends), so no assertion depends on
timing.
"""

import openreg_runtime
import pytest
import torch

from openreg_torch.openreg.streams import _hold

openreg = torch.openreg

SIZE = 3_000_000  # float32 elements: 12 MB, in the 16 MiB size class


@pytest.fixture
def size():
    """SIZE, with every stream idle and the host cache empty: a freed block of its size
    class can only be the test's own."""
    for device in range(openreg.device_count()):
        openreg.synchronize(device)
    torch.accelerator.memory.empty_host_cache()
    return SIZE


def is_runtime_pinned(address: int) -> bool:
    return openreg_runtime.pointer_attributes(address).type == openreg_runtime.MemoryType.HOST


# ----------------------------------------------------------------------- pinned tensors

def test_pin_memory_and_is_pinned():
    host = torch.arange(10, dtype=torch.float32)
    assert not host.is_pinned()
    pinned = host.pin_memory()
    assert pinned.is_pinned() and pinned.device.type == "cpu"
    assert torch.equal(pinned, host) and pinned.data_ptr() != host.data_ptr()
    assert pinned.pin_memory() is pinned  # already pinned: returned as is
    assert pinned[3:].is_pinned()  # inside a pinned block, not at its start
    assert is_runtime_pinned(pinned.data_ptr())
    empty = torch.empty(10, pin_memory=True)
    assert empty.is_pinned() and is_runtime_pinned(empty.data_ptr())


def test_pinned_memory_survives_a_device_round_trip():
    host = torch.randn(1000).pin_memory()
    device = host.to("openreg", non_blocking=True)
    back = torch.empty(1000).pin_memory()
    back.copy_(device, non_blocking=True)
    openreg.current_stream().synchronize()
    torch.testing.assert_close(back, host, rtol=0, atol=0)


def test_a_pinned_request_too_large_for_the_host_is_a_clear_error():
    with pytest.raises(torch.OutOfMemoryError, match="orMallocHost: cannot map"):
        torch.empty(2**50, dtype=torch.uint8, pin_memory=True)


# ---------------------------------------------------------------------------- reuse

def test_freed_block_is_reused_at_once_without_copies(size):
    block = torch.empty(size, pin_memory=True)
    address = block.data_ptr()
    del block
    assert torch.empty(size, pin_memory=True).data_ptr() == address


def test_block_is_reused_after_its_copy_has_run(size):
    source = torch.full((size,), 2.0).pin_memory()
    address = source.data_ptr()
    device = source.to("openreg", non_blocking=True)
    openreg.current_stream().synchronize()
    del source
    assert torch.empty(size, pin_memory=True).data_ptr() == address
    assert device.sum().item() == 2.0 * size


def test_source_of_a_copy_in_flight_is_not_reused(size):
    device = torch.zeros(size, device="openreg")
    with _hold():
        source = torch.full((size,), 5.0).pin_memory()
        address = source.data_ptr()
        device.copy_(source, non_blocking=True)
        del source
        other = torch.empty(size, pin_memory=True)
        assert other.data_ptr() != address
        other.fill_(-1)
    assert device.sum().item() == 5.0 * size  # the copy read the block, not `other`
    # Once the copy has run, the block comes back.
    openreg.current_stream().synchronize()
    assert torch.empty(size, pin_memory=True).data_ptr() == address


def test_destination_of_a_copy_in_flight_is_not_reused(size):
    # On a side stream of the other device: the block's use is tracked per stream.
    device = torch.full((size,), 3.0, device="openreg:1")
    stream = openreg.Stream(device=1)
    with _hold(stream):
        out = torch.empty(size).pin_memory()
        address = out.data_ptr()
        with openreg.stream(stream):
            out.copy_(device, non_blocking=True)
        del out
        assert torch.empty(size, pin_memory=True).data_ptr() != address
    stream.synchronize()
    assert torch.empty(size, pin_memory=True).data_ptr() == address


def test_a_copy_from_inside_a_block_protects_the_whole_block(size):
    # A copy of a slice records its use under the block's start address.
    device = torch.zeros(size - 100, device="openreg")
    with _hold():
        source = torch.full((size,), 4.0).pin_memory()
        address = source.data_ptr()
        device.copy_(source[100:], non_blocking=True)
        del source
        assert torch.empty(size, pin_memory=True).data_ptr() != address
    assert device.sum().item() == 4.0 * (size - 100)


# ---------------------------------------------------------------------- cache control

def test_empty_cache_returns_free_blocks_to_the_runtime(size):
    block = torch.empty(size, pin_memory=True)
    address = block.data_ptr()
    del block
    assert is_runtime_pinned(address)  # cached, still pinned
    torch.accelerator.memory.empty_host_cache()
    assert not is_runtime_pinned(address)
    kept = torch.empty(size, pin_memory=True)  # in use: empty_cache leaves it alone
    openreg.empty_cache()
    assert is_runtime_pinned(kept.data_ptr())


def test_empty_cache_keeps_blocks_a_copy_still_uses(size):
    device = torch.zeros(size, device="openreg")
    with _hold():
        source = torch.ones(size).pin_memory()
        address = source.data_ptr()
        device.copy_(source, non_blocking=True)
        del source
        torch.accelerator.memory.empty_host_cache()
        assert is_runtime_pinned(address)  # the pending copy still reads it
    openreg.current_stream().synchronize()
    torch.accelerator.memory.empty_host_cache()
    assert not is_runtime_pinned(address)
    assert device.sum().item() == size


# ------------------------------------------------------------------------- statistics

def test_host_memory_stats_follow_allocations(size):
    openreg.reset_accumulated_host_memory_stats()
    openreg.reset_peak_host_memory_stats()
    before = openreg.host_memory_stats()
    rounded = 2 ** (size * 4 - 1).bit_length()  # power-of-two size classes
    block = torch.empty(size, pin_memory=True)
    during = openreg.host_memory_stats()
    assert during["allocations.current"] == before["allocations.current"] + 1
    assert during["allocated_bytes.current"] == before["allocated_bytes.current"] + rounded
    assert during["active_requests.current"] == before["active_requests.current"] + 1
    assert during["active_bytes.current"] == before["active_bytes.current"] + rounded
    assert during["num_host_alloc"] == before["num_host_alloc"] + 1
    assert during["host_alloc_time.count"] == before["host_alloc_time.count"] + 1
    del block
    cached = openreg.host_memory_stats()
    assert cached["active_bytes.current"] == before["active_bytes.current"]
    assert cached["allocated_bytes.current"] == during["allocated_bytes.current"]  # kept
    assert cached["active_bytes.peak"] >= rounded
    torch.accelerator.memory.empty_host_cache()
    emptied = openreg.host_memory_stats()
    assert emptied["allocated_bytes.current"] == before["allocated_bytes.current"]
    assert emptied["num_host_free"] == before["num_host_free"] + 1
    assert emptied["host_free_time.count"] == before["host_free_time.count"] + 1
    openreg.reset_peak_host_memory_stats()
    assert openreg.host_memory_stats()["active_bytes.peak"] < rounded
    openreg.reset_accumulated_host_memory_stats()
    assert openreg.host_memory_stats()["allocations.allocated"] == 0


def test_host_memory_stats_are_keyed_as_torch_cuda():
    stats = openreg.host_memory_stats()
    for stat in ("allocations", "allocated_bytes", "active_requests", "active_bytes"):
        for kind in ("current", "peak", "allocated", "freed"):
            assert isinstance(stats[f"{stat}.{kind}"], int)
    for timing in ("host_alloc_time", "host_free_time"):
        for kind in ("total", "max", "min", "count", "avg"):
            assert f"{timing}.{kind}" in stats
    nested = openreg.host_memory_stats_as_nested_dict()
    assert nested["allocations"]["current"] == stats["allocations.current"]
    assert list(stats) == sorted(stats)
