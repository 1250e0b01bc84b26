"""Every PrivateUse1 hook, observed through the PyTorch API that relies on it."""

import pytest
import torch

import openreg_torch


# --- high-priority hooks -------------------------------------------------------------

def test_init_hook_starts_runtime_lazily(run_python):
    result = run_python(
        """
        import torch
        assert not torch.openreg.is_initialized()
        torch.empty(1, device="openreg")  # PyTorch calls hooks.init() on first device use
        torch.openreg.init()
        print(torch.openreg.is_initialized())
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


def test_has_primary_context_tracks_device_use(run_python):
    result = run_python(
        """
        import torch, openreg_torch
        before = openreg_torch._C._has_primary_context(1)
        torch.ones(4, device="openreg:1")
        print(before, openreg_torch._C._has_primary_context(1))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True"]


def test_has_primary_context_rejects_bad_index():
    with pytest.raises(RuntimeError, match="valid indices"):
        openreg_torch._C._has_primary_context(9)


def test_default_generator_hook_drives_seeding():
    torch.manual_seed(123)
    on_device = torch.rand(5, device="openreg")
    torch.manual_seed(123)
    torch.testing.assert_close(on_device.cpu(), torch.rand(5))
    assert torch.openreg.default_generator(0).device == torch.device("openreg", 0)


def test_new_generator_hook():
    generator = torch.Generator(device="openreg:1")
    assert generator.device == torch.device("openreg", 1)
    generator.manual_seed(7)
    sample = torch.randn(4, device="openreg:1", generator=generator)
    torch.testing.assert_close(sample.cpu(), torch.randn(4, generator=torch.Generator().manual_seed(7)))


def test_device_from_pointer_hook():
    tensor = torch.empty(16, device="openreg:1")
    assert openreg_torch._C._device_from_pointer(tensor.data_ptr()) == torch.device("openreg", 1)
    with pytest.raises(RuntimeError, match="not openreg device memory"):
        openreg_torch._C._device_from_pointer(torch.empty(4).data_ptr())


def test_pinned_memory_allocator_and_is_pinned_hooks():
    host = torch.arange(10.0)
    assert not host.is_pinned()
    pinned = host.pin_memory()
    assert pinned.is_pinned()
    torch.testing.assert_close(pinned, host)
    assert torch.empty(8, pin_memory=True).is_pinned()
    # A view into pinned memory is pinned as well.
    assert pinned[3:].is_pinned()


# --- low-priority hooks --------------------------------------------------------------

def test_is_built_and_available():
    assert torch.openreg.is_available()
    assert torch.accelerator.is_available()
    assert torch._C._get_privateuse1_backend_name() == "openreg"


def test_device_count_hook():
    assert torch.accelerator.device_count() == torch.openreg.device_count() == 2


def test_set_get_current_device_hooks():
    torch.accelerator.set_device_index(1)
    assert torch.accelerator.current_device_index() == 1
    with pytest.raises(RuntimeError, match="valid indices"):
        torch.accelerator.set_device_index(4)
    assert torch.accelerator.current_device_index() == 1


def test_exchange_device_hooks():
    # torch.accelerator.device_index uses exchangeDevice / maybeExchangeDevice.
    with torch.accelerator.device_index(1):
        assert torch.openreg.current_device() == 1
    assert torch.openreg.current_device() == 0
    with torch.accelerator.device_index(None):
        assert torch.openreg.current_device() == 0


def test_backward_runs_on_device_threads():
    # Autograd's device threads use the guard and the device count.
    weights = torch.randn(3, 3, device="openreg:1", requires_grad=True)
    (weights * 2).sum().backward()
    torch.testing.assert_close(weights.grad.cpu(), torch.full((3, 3), 2.0))
