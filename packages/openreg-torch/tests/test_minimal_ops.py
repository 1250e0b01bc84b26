"""The seed's minimal operator set, one test per operator."""

import pytest
import torch

from openreg_torch.testing import recorded_device_work


def test_empty_memory_format():
    tensor = torch.empty(2, 3, 4, 5, device="openreg", memory_format=torch.channels_last)
    assert tensor.device == torch.device("openreg", 0)
    assert tensor.is_contiguous(memory_format=torch.channels_last)
    assert torch.empty(3, dtype=torch.float64, device="openreg:1").device.index == 1


def test_empty_rejects_pinned_device_tensor():
    with pytest.raises(RuntimeError, match="only host"):
        torch.empty(3, device="openreg", pin_memory=True)


def test_empty_strided():
    tensor = torch.empty_strided((2, 3), (1, 2), device="openreg")
    assert tensor.stride() == (1, 2)
    tensor.copy_(torch.arange(6.0).view(2, 3))
    torch.testing.assert_close(tensor.cpu(), torch.arange(6.0).view(2, 3))


def test_as_strided_and_view_share_storage():
    base = torch.arange(12.0, device="openreg")
    strided = base.as_strided((3, 2), (4, 1), 1)
    torch.testing.assert_close(strided.cpu(), torch.arange(12.0).as_strided((3, 2), (4, 1), 1))
    viewed = base.view(3, 4)
    viewed[1, 1] = 100.0
    assert base[5].item() == 100.0
    assert viewed.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()


def test_reshape_alias():
    base = torch.arange(6.0, device="openreg").view(2, 3).t()
    aliased = torch.ops.aten._reshape_alias(base, (3, 2), (1, 3))
    torch.testing.assert_close(aliased.cpu(), torch.arange(6.0).view(2, 3).t())


def test_resize_grows_and_keeps_data():
    tensor = torch.arange(4.0, device="openreg")
    tensor.resize_(2, 8)
    assert tensor.shape == (2, 8)
    torch.testing.assert_close(tensor.view(-1)[:4].cpu(), torch.arange(4.0))
    tensor.resize_(1)
    assert tensor.shape == (1,)
    tensor.resize_(2, 3, 4, 5, memory_format=torch.channels_last)
    assert tensor.is_contiguous(memory_format=torch.channels_last)


def test_storage_resize():
    storage = torch.arange(4.0, device="openreg").untyped_storage()
    storage.resize_(64)
    assert storage.nbytes() == 64
    restored = torch.empty(0, device="openreg").set_(storage, 0, (4,), (1,))
    torch.testing.assert_close(restored.cpu(), torch.arange(4.0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool,
                                   torch.bfloat16, torch.complex64])
def test_copy_host_device_round_trip(dtype):
    host = torch.arange(24).view(2, 3, 4).to(dtype)
    device = host.to("openreg")
    assert device.dtype == dtype
    torch.testing.assert_close(device.cpu(), host)


def test_copy_between_devices():
    source = torch.randn(5, 7, device="openreg:0")
    moved = source.to("openreg:1")
    assert moved.device.index == 1
    torch.testing.assert_close(moved.cpu(), source.cpu())


def test_copy_converts_dtype_and_layout():
    host = torch.randn(6, 4)
    device = torch.empty(4, 6, dtype=torch.float64, device="openreg").t()
    device.copy_(host)
    torch.testing.assert_close(device.cpu(), host.double())
    transposed = host.to("openreg").t().contiguous()
    torch.testing.assert_close(transposed.cpu(), host.t())


def test_copy_broadcasts_and_handles_conjugate():
    device = torch.zeros(3, 4, device="openreg")
    device.copy_(torch.arange(4.0))
    torch.testing.assert_close(device.cpu(), torch.arange(4.0).expand(3, 4))
    complex_host = torch.randn(5, dtype=torch.complex64)
    conjugated = complex_host.to("openreg").conj()
    torch.testing.assert_close(conjugated.cpu(), complex_host.conj())
    torch.testing.assert_close(conjugated.resolve_conj().cpu(), complex_host.conj().resolve_conj())


@pytest.mark.parametrize("numel", [3 << 16, 3 << 20], ids=["768KiB", "12MiB"])
def test_large_copies_run_as_parallel_kernels_in_stream_order(numel):
    # From 256 KiB a copy the caller waits for is a kernel (the CPU's copy_ over the
    # intra-op threads), still seen as a copy and ordered after the stream's earlier work.
    host = torch.randn(numel)
    device = torch.zeros(numel, device="openreg")
    side = torch.openreg.Stream()
    with torch.openreg.stream(side):
        device.add_(1.0)  # the copies below come after it on the same stream
        (back, twin), work = recorded_device_work(
            lambda: (device[1:].copy_(host[:-1]),  # offsets inside both allocations
                     device.cpu(), device.clone())[1:])
    expected = torch.cat([torch.ones(1), host[:-1]])
    torch.testing.assert_close(back, expected)
    torch.testing.assert_close(twin.cpu(), expected)
    kinds = [(kind, name) for kind, name, _, _ in work]
    assert ("copy", "Memcpy HtoD") in kinds and ("copy", "Memcpy DtoH") in kinds, kinds
    assert ("copy", "Memcpy DtoD") in kinds, kinds


@pytest.mark.parametrize("numel", [3 << 16, 1 << 19], ids=["768KiB-inline", "2MiB-queued"])
def test_pinned_non_blocking_copies_of_batch_size(numel):
    # Up to OR_INLINE_ASYNC_BYTES on an idle stream the copy is made on the calling thread,
    # split over the intra-op threads; larger ones go to the stream's worker. Both are seen
    # as copies and land in stream order.
    host = torch.randn(numel).pin_memory()
    device = torch.zeros(numel, device="openreg")
    back = torch.empty(numel).pin_memory()

    def round_trip():
        device.copy_(host, non_blocking=True).mul_(2)
        back.copy_(device, non_blocking=True)

    _, work = recorded_device_work(round_trip)  # waits for the copies
    torch.testing.assert_close(back, host * 2)
    kinds = [(kind, name) for kind, name, _, _ in work]
    assert kinds.count(("copy", "Memcpy HtoD")) == 1 and kinds.count(("copy", "Memcpy DtoH")) == 1


def test_non_blocking_copies():
    host = torch.randn(1000).pin_memory()
    device = host.to("openreg", non_blocking=True)
    back = torch.empty(1000).pin_memory()
    back.copy_(device, non_blocking=True)
    torch.openreg.synchronize()
    torch.testing.assert_close(back, host)


def test_copy_from_and_resize():
    destination = torch.empty(0, device="openreg")
    torch.ops.aten._copy_from_and_resize(torch.arange(5.0), destination)
    torch.testing.assert_close(destination.cpu(), torch.arange(5.0))


@pytest.mark.parametrize("value", [3.5, 7, True, 2 + 3j])
def test_local_scalar_dense(value):
    tensor = torch.tensor([value], device="openreg")
    assert tensor.item() == value


def test_set_overloads():
    source = torch.arange(6.0, device="openreg")
    target = torch.empty(0, device="openreg")
    target.set_(source)  # set_.source_Tensor
    assert target.data_ptr() == source.data_ptr()
    target.set_(source.untyped_storage())  # set_.source_Storage
    assert target.shape == (6,)
    target.set_(source.untyped_storage(), 2, (2, 2), (2, 1))  # .._storage_offset
    torch.testing.assert_close(target.cpu(), torch.tensor([[2.0, 3.0], [4.0, 5.0]]))
    target.set_()  # beyond the seed's table
    assert target.numel() == 0 and target.device.type == "openreg"


def test_set_rejects_storage_of_other_device():
    with pytest.raises(RuntimeError, match="devices must match"):
        torch.empty(0, device="openreg:0").set_(torch.ones(2, device="openreg:1").untyped_storage())
