"""Operators without an openreg kernel run through the fallback, matching the CPU."""

import openreg_torch.fallback
import pytest
import torch

from openreg_torch.testing import assert_matches_cpu as check


def test_elementwise_and_broadcast():
    check(lambda a, b: a * b + a.exp() - b.sigmoid(), torch.randn(4, 5), torch.randn(5))


def test_matmul_and_reductions():
    check(lambda a, b: (a @ b).sum(dim=1), torch.randn(8, 16), torch.randn(16, 4))
    check(lambda a: (a.mean(), a.std(dim=0), a.amax(dim=1)), torch.randn(6, 7))


def test_views_share_device_storage():
    base = torch.zeros(4, 4, device="openreg")
    view = base.transpose(0, 1)[1]
    view.fill_(3.0)
    expected = torch.zeros(4, 4)
    expected.transpose(0, 1)[1].fill_(3.0)
    torch.testing.assert_close(base.cpu(), expected)


def test_in_place_ops_modify_device_tensor():
    tensor = torch.ones(5, device="openreg")
    pointer = tensor.data_ptr()
    tensor.add_(2).mul_(3)
    assert tensor.data_ptr() == pointer
    torch.testing.assert_close(tensor.cpu(), torch.full((5,), 9.0))


def test_out_variants():
    out = torch.empty(3, device="openreg")
    torch.add(torch.ones(3, device="openreg"), 4, out=out)
    torch.testing.assert_close(out.cpu(), torch.full((3,), 5.0))
    resized = torch.empty(0, device="openreg")
    torch.mul(torch.arange(4.0, device="openreg"), 2, out=resized)
    torch.testing.assert_close(resized.cpu(), torch.arange(4.0) * 2)


def test_indexing():
    host = torch.randn(10, 3)
    index = torch.tensor([0, 4, 4, 9])
    check(lambda t, i: t[i], host, index)
    check(lambda t: t[t > 0], host)
    device = host.to("openreg")
    device[index.to("openreg")] = 0.0
    expected = host.clone()
    expected[index] = 0.0
    torch.testing.assert_close(device.cpu(), expected)


def test_sort_topk_cumsum():
    check(lambda t: torch.sort(t, dim=0), torch.randn(50, 3))
    check(lambda t: torch.topk(t, 3), torch.randn(20))
    check(lambda t: torch.cumsum(t, 0), torch.randn(100))


def test_cat_stack_and_lists():
    check(torch.cat, [torch.randn(2, 3) for _ in range(3)])
    chunks = torch.arange(10.0, device="openreg").chunk(3)
    assert [c.device.type for c in chunks] == ["openreg"] * 3


def test_factories_on_device():
    torch.testing.assert_close(torch.arange(5, device="openreg").cpu(), torch.arange(5))
    torch.testing.assert_close(torch.full((2, 2), 7.0, device="openreg").cpu(), torch.full((2, 2), 7.0))
    torch.testing.assert_close(torch.eye(3, device="openreg").cpu(), torch.eye(3))
    torch.testing.assert_close(torch.zeros_like(torch.ones(3, device="openreg")).cpu(), torch.zeros(3))


@pytest.mark.parametrize("current", [0, 1])
def test_fallback_factories_without_a_device_index_land_on_the_current_device(current):
    # `device="openreg"` (and a default device of "openreg") names the current device; a
    # result without an index matched no other tensor ("openreg:0 and openreg!").
    assert openreg_torch.fallback.route_of("aten::tril_indices") == "zero-copy fallback"
    torch.openreg.set_device(current)
    rows, cols = torch.tril_indices(3, 3, -1, device="openreg")
    upper = torch.triu_indices(3, 3, device="openreg")
    for result in (rows, upper):
        assert result.device == torch.device("openreg", current)
    matrix = torch.arange(9.0, device="openreg").view(3, 3)
    torch.testing.assert_close(matrix[rows, cols].cpu(), torch.tensor([3.0, 6.0, 7.0]))
    torch.testing.assert_close(upper.cpu(), torch.triu_indices(3, 3))
    with torch.device("openreg"):
        assert torch.tril_indices(2, 2).device == torch.device("openreg", current)


def test_mixed_cpu_scalar_tensor_allowed():
    device = torch.ones(3, device="openreg")
    result = device * torch.tensor(4.0)  # 0-dim CPU tensors are allowed, as on CUDA
    torch.testing.assert_close(result.cpu(), torch.full((3,), 4.0))


def test_two_devices_rejected():
    with pytest.raises(RuntimeError, match="same device.*openreg:0 and openreg:1"):
        torch.ones(2, device="openreg:0") + torch.ones(2, device="openreg:1")


def test_results_land_on_input_device():
    result = torch.ones(3, device="openreg:1").exp()
    assert result.device == torch.device("openreg", 1)
    assert torch.openreg.current_device() == 0


def test_printing_device_tensor():
    text = repr(torch.arange(3.0, device="openreg:1"))
    assert "device='openreg:1'" in text and "0., 1., 2." in text


@pytest.mark.parametrize("call", [
    lambda x: torch._fused_dropout(x, 0.5),  # CUDA-only operators: no CPU kernel to run
    lambda x: torch._masked_scale(x, x > 0, 2.0),
], ids=["_fused_dropout", "_masked_scale"])
def test_operator_without_cpu_kernel_is_named_missing_on_openreg(call):
    # Not PyTorch's "Could not run ... from the 'CPU' backend": the user never asked for
    # the CPU; what is missing is an openreg kernel for that operator.
    with pytest.raises(NotImplementedError) as error:
        call(torch.ones(4, device="openreg"))
    message = str(error.value)
    assert "'openreg' backend" in message and "missing on openreg" in message, message
    assert "'CPU' backend" not in message, message
    assert error.value.args[0].startswith("Could not run 'aten::_")
