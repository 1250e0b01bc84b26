"""The caching device allocator: reuse, statistics, empty_cache, OOM."""

import pytest
import torch

from torch.openreg import memory_stats


def test_freed_block_is_reused():
    first = torch.empty(1000, device="openreg")
    pointer = first.data_ptr()
    del first
    again = torch.empty(1000, device="openreg")
    assert again.data_ptr() == pointer


def test_statistics_follow_allocations():
    torch.openreg.synchronize()
    base = torch.openreg.memory_allocated()
    tensor = torch.empty(1 << 20, dtype=torch.uint8, device="openreg")
    assert torch.openreg.memory_allocated() - base >= 1 << 20
    assert torch.openreg.max_memory_allocated() >= torch.openreg.memory_allocated()
    assert torch.openreg.memory_reserved() >= torch.openreg.memory_allocated()
    del tensor
    assert torch.openreg.memory_allocated() == base
    stats = memory_stats()
    assert stats["allocation.all.allocated"] >= 1
    assert stats["allocated_bytes.all.current"] == base


def test_reset_peak_stats():
    big = torch.empty(4 << 20, dtype=torch.uint8, device="openreg")
    del big
    assert torch.openreg.max_memory_allocated() >= 4 << 20
    torch.openreg.reset_peak_memory_stats()
    assert torch.openreg.max_memory_allocated() == torch.openreg.memory_allocated()
    # Every peak, the requested bytes' too (as torch.cuda resets them).
    stats = memory_stats()
    for kind in ("allocated_bytes", "requested_bytes", "active_bytes", "allocation"):
        assert stats[f"{kind}.all.peak"] == stats[f"{kind}.all.current"], kind


def test_reset_accumulated_stats():
    torch.empty(1 << 20, dtype=torch.uint8, device="openreg")
    torch.openreg.reset_accumulated_memory_stats()
    stats = memory_stats()
    for kind in ("allocated_bytes", "requested_bytes", "active_bytes", "allocation"):
        assert stats[f"{kind}.all.allocated"] == stats[f"{kind}.all.freed"] == 0, kind


def test_empty_cache_returns_memory_to_device():
    tensor = torch.empty(64 << 20, dtype=torch.uint8, device="openreg")
    free_with_tensor, total = torch.openreg.mem_get_info()
    del tensor
    assert torch.openreg.memory_reserved() >= 64 << 20  # still cached
    torch.openreg.empty_cache()
    free_after, _ = torch.openreg.mem_get_info()
    assert free_after >= free_with_tensor + (64 << 20)
    assert total == torch.openreg.get_device_properties().total_memory


def test_devices_have_separate_statistics():
    base = torch.openreg.memory_allocated(1)
    tensor = torch.empty(1 << 20, dtype=torch.uint8, device="openreg:1")
    assert torch.openreg.memory_allocated(1) - base >= 1 << 20
    assert torch.accelerator.memory.memory_allocated(1) == torch.openreg.memory_allocated(1)
    del tensor


def test_out_of_memory_frees_cache_then_raises(run_python):
    result = run_python(
        """
        import torch
        chunk = 24 << 20
        kept = [torch.empty(chunk, dtype=torch.uint8, device="openreg") for _ in range(2)]
        cached = torch.empty(chunk, dtype=torch.uint8, device="openreg")
        del cached  # cached, not free on the device
        # Needs the cached block's memory: the allocator must empty its cache and retry.
        other_size = torch.empty(chunk + (4 << 20), dtype=torch.uint8, device="openreg")
        stats = torch.openreg.memory_stats()
        assert stats["num_alloc_retries"] >= 1, stats["num_alloc_retries"]
        del other_size
        try:
            torch.empty(200 << 20, dtype=torch.uint8, device="openreg")
        except torch.OutOfMemoryError as error:
            message = str(error)
        else:
            raise AssertionError("no OOM")
        assert "Tried to allocate 200.00 MiB" in message, message
        assert "device 0" in message and "OPENREG_DEVICE_MEMORY" in message, message
        assert torch.openreg.memory_stats()["num_ooms"] == 1
        # Nothing is lost: the device keeps working and the statistics are exact.
        del kept
        torch.openreg.empty_cache()
        assert torch.openreg.memory_allocated() == 0
        assert torch.openreg.memory_reserved() == 0
        print((torch.ones(1000, device="openreg") * 2).sum().item())
        """,
        env={"OPENREG_DEVICE_MEMORY": "80MiB"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "2000.0"


def test_zero_size_tensor_has_no_memory():
    tensor = torch.empty(0, device="openreg")
    assert tensor.data_ptr() == 0
    assert tensor.cpu().shape == (0,)


def test_caching_allocator_alloc_and_delete():
    # torch.cuda's raw allocation API: a block of the caching allocator, on a stream.
    stream = torch.openreg.Stream(device=1)
    before = torch.openreg.memory_allocated(1)
    pointer = torch.openreg.caching_allocator_alloc(1 << 20, device=1, stream=stream)
    assert torch.openreg.memory_allocated(1) - before == 1 << 20
    assert torch.openreg._C._device_from_pointer(pointer) == torch.device("openreg", 1)
    torch.openreg.caching_allocator_delete(pointer)
    assert torch.openreg.memory_allocated(1) == before
    with pytest.raises(ValueError, match="freed already"):
        torch.openreg.caching_allocator_delete(pointer)
    with pytest.raises(ValueError, match="not on openreg:0"):
        torch.openreg.caching_allocator_alloc(16, device=0, stream=stream)
    assert torch.openreg.get_allocator_backend() == "native"
    assert torch.openreg.OutOfMemoryError is torch.OutOfMemoryError
    assert torch.openreg.is_current_stream_capturing() is False
