"""openreg::custom_abs: a forward-only custom operator (schema, PrivateUse1 kernel,
autograd fallback, Python meta kernel)."""

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import openreg_ops_extra

custom_abs = torch.ops.openreg.custom_abs


def test_schema_is_defined_once_in_the_openreg_namespace():
    assert str(custom_abs.default._schema) == "openreg::custom_abs(Tensor input) -> Tensor"
    table = torch._C._dispatch_dump_table("openreg::custom_abs")
    kernels = {line.split(":")[0]: line for line in table.splitlines() if "[kernel]" in line}
    assert "OpenRegExtra.cpp" in kernels["PrivateUse1"]
    assert "OpenRegExtra.cpp" in kernels["AutogradPrivateUse1"]
    assert "torch/library.py" in kernels["Meta"]  # the Python meta kernel
    assert "CPU" not in kernels


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32,
                                   torch.bfloat16, torch.complex64], ids=str)
def test_matches_torch_abs_through_the_stub(dtype, stub_calls):
    cpu = (torch.randn(5, 4) * 10).to(dtype) if not dtype.is_complex else \
        torch.randn(5, 4, dtype=dtype)
    result = openreg_ops_extra.custom_abs(cpu.to("openreg"))
    assert result.device.type == "openreg" and result.dtype == dtype.to_real()
    torch.testing.assert_close(result.cpu(), torch.abs(cpu))
    assert stub_calls() == 1


def test_output_layout_follows_the_input():
    device = torch.randn(4, 6, device="openreg").t()
    assert custom_abs(device).stride() == device.stride()


def test_forward_runs_with_grad_mode_on_and_backward_raises():
    device = torch.randn(3, device="openreg", requires_grad=True)
    assert torch.is_grad_enabled()
    result = custom_abs(device)
    torch.testing.assert_close(result.detach().cpu(), device.detach().cpu().abs())
    with pytest.raises(RuntimeError, match="derivative for openreg::custom_abs is not implemented"):
        result.sum().backward()


def test_no_grad_input_gives_no_graph():
    result = custom_abs(torch.randn(3, device="openreg"))
    assert result.grad_fn is None and not result.requires_grad


def test_cpu_tensors_are_rejected():
    with pytest.raises(NotImplementedError, match="openreg::custom_abs.*CPU"):
        custom_abs(torch.randn(3))


def test_meta_tensor():
    result = custom_abs(torch.empty(2, 3, dtype=torch.complex128, device="meta"))
    assert result.device.type == "meta" and result.shape == (2, 3)
    assert result.dtype == torch.float64


def test_fake_tensor_mode(stub_calls):
    real = torch.randn(4, 5, device="openreg").t()
    with FakeTensorMode() as mode:
        fake = mode.from_tensor(real)
        result = custom_abs(fake)
        complex_result = custom_abs(mode.from_tensor(torch.randn(3, dtype=torch.complex64,
                                                                 device="openreg")))
    assert result.device == real.device and result.shape == (5, 4)
    assert result.stride() == real.stride() and result.dtype == torch.float32
    assert complex_result.dtype == torch.float32
    assert stub_calls() == 0  # nothing ran


def test_torch_compile_aot_eager_fullgraph(stub_calls):
    def function(x):
        return custom_abs(x * 2) + 1

    compiled = torch.compile(function, backend="aot_eager", fullgraph=True)
    device = torch.randn(8, device="openreg")
    torch.testing.assert_close(compiled(device).cpu(), function(device).cpu())
    assert stub_calls() == 2  # the compiled graph ran the real kernel, then eager did


def test_opcheck():
    # Schema, fake kernel vs real kernel, autograd registration and AOT dispatch.
    device = torch.randn(3, 4, dtype=torch.float64, device="openreg")
    torch.library.opcheck(custom_abs.default, (device,))
