"""differentiable_abs: forward and backward through a Python torch.autograd.Function
whose forward is the custom_abs device operator and whose backward uses device ops."""

import pytest
import torch

import openreg_ops_extra


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128], ids=str)
def test_gradcheck(dtype):
    device = torch.randn(4, 3, dtype=dtype, device="openreg", requires_grad=True)
    assert torch.autograd.gradcheck(openreg_ops_extra.differentiable_abs, (device,))


def test_forward_runs_the_stub_and_backward_matches_torch_abs(stub_calls):
    cpu = torch.randn(6, dtype=torch.float64, requires_grad=True)
    device = cpu.detach().to("openreg").requires_grad_()
    result = openreg_ops_extra.differentiable_abs(device)
    assert stub_calls() == 1
    assert "DifferentiableAbs" in result.grad_fn.name()
    torch.testing.assert_close(result.detach().cpu(), cpu.detach().abs())
    result.sum().backward()
    cpu.abs().sum().backward()
    torch.testing.assert_close(device.grad.cpu(), cpu.grad)


def test_torch_compile():
    compiled = torch.compile(openreg_ops_extra.differentiable_abs, backend="aot_eager",
                             fullgraph=True)
    device = torch.randn(5, dtype=torch.float64, device="openreg", requires_grad=True)
    (grad,) = torch.autograd.grad(compiled(device).sum(), device)
    torch.testing.assert_close(grad.cpu(), device.detach().cpu().sgn())
