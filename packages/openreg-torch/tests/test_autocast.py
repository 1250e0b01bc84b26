"""torch.autocast(device_type="openreg") follows PyTorch's autocast policy."""

import warnings

import pytest
import torch


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_lower_precision_and_fp32_ops(dtype):
    a = torch.randn(4, 4, device="openreg")
    b = torch.randn(4, 4, device="openreg")
    with torch.autocast(device_type="openreg", dtype=dtype):
        product = a @ b           # lower-precision op
        softmax = torch.softmax(product, dim=1)  # fp32 op
        promoted = product + a    # promote: widest input
    assert product.dtype == dtype
    assert softmax.dtype == torch.float32
    assert promoted.dtype == torch.float32
    torch.testing.assert_close(product.float().cpu(), (a.cpu().to(dtype) @ b.cpu().to(dtype)).float())


def test_banned_op_raises():
    with torch.autocast(device_type="openreg", dtype=torch.float16):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            torch.nn.functional.binary_cross_entropy(
                torch.rand(3, device="openreg"), torch.rand(3, device="openreg"))


def test_supported_dtypes():
    assert set(torch.openreg.get_amp_supported_dtype()) == {
        torch.float16, torch.bfloat16, torch.float32}
    with pytest.warns(UserWarning, match="not supported"):
        with torch.autocast(device_type="openreg", dtype=torch.float64):
            pass


def test_autocast_off_outside_region():
    a = torch.randn(2, 2, device="openreg")
    with torch.autocast(device_type="openreg", dtype=torch.bfloat16):
        pass
    assert (a @ a).dtype == torch.float32


def test_float32_autocast_runs_lower_precision_ops_in_float32():
    # As CUDA's autocast does (it accepts float32; openreg disabled itself with a warning).
    a = torch.randn(4, 4, device="openreg").half()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.autocast(device_type="openreg", dtype=torch.float32):
            product = a @ a
    assert product.dtype == torch.float32
    torch.testing.assert_close(product.cpu(), a.cpu().float() @ a.cpu().float())
