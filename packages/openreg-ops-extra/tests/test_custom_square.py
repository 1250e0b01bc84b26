"""openreg::custom_square: forward and backward registered separately (a C++
torch::autograd::Function for AutogradPrivateUse1)."""

import pytest
import torch

import openreg_ops_extra

custom_square = torch.ops.openreg.custom_square


def test_registrations():
    assert str(custom_square.default._schema) == "openreg::custom_square(Tensor input) -> Tensor"
    table = torch._C._dispatch_dump_table("openreg::custom_square")
    kernels = {line.split(":")[0]: line for line in table.splitlines() if "[kernel]" in line}
    assert "OpenRegExtra.cpp" in kernels["PrivateUse1"]
    assert "OpenRegExtra.cpp" in kernels["AutogradPrivateUse1"]
    assert "torch/library.py" in kernels["Meta"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16,
                                   torch.bfloat16, torch.complex128], ids=str)
def test_forward(dtype):
    cpu = torch.randn(7, 3, dtype=dtype)
    result = openreg_ops_extra.custom_square(cpu.to("openreg").t())
    torch.testing.assert_close(result.cpu(), cpu.t() * cpu.t())


def test_backward_matches_cpu():
    cpu = torch.randn(5, dtype=torch.float64, requires_grad=True)
    device = cpu.detach().to("openreg").requires_grad_()
    result = custom_square(device)
    assert result.grad_fn is not None and "CustomSquareFunction" in result.grad_fn.name()
    result.sum().backward()
    (cpu * cpu).sum().backward()
    torch.testing.assert_close(device.grad.cpu(), cpu.grad)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128], ids=str)
def test_gradcheck(dtype):
    device = torch.randn(4, 3, dtype=dtype, device="openreg", requires_grad=True)
    assert torch.autograd.gradcheck(custom_square, (device,))
    assert torch.autograd.gradgradcheck(custom_square, (device,))


def test_fake_tensor_mode_with_grad():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        fake = mode.from_tensor(torch.randn(3, 2, device="openreg")).requires_grad_()
        result = custom_square(fake)
        (grad,) = torch.autograd.grad(result.sum(), fake)
    assert result.shape == grad.shape == (3, 2) and grad.device.type == "openreg"


def test_torch_compile_forward_and_backward():
    def function(x):
        return custom_square(x).sin().sum()

    compiled = torch.compile(function, backend="aot_eager", fullgraph=True)
    device = torch.randn(6, dtype=torch.float64, device="openreg", requires_grad=True)
    (compiled_grad,) = torch.autograd.grad(compiled(device), device)
    (eager_grad,) = torch.autograd.grad(function(device), device)
    torch.testing.assert_close(compiled_grad.cpu(), eager_grad.cpu())


def test_opcheck():
    device = torch.randn(3, 4, dtype=torch.float64, device="openreg")
    torch.library.opcheck(custom_square.default, (device,))
    # With a grad-requiring input (PyTorch's autograd-registration check only knows
    # CPU/CUDA/XPU, so it is left out).
    torch.library.opcheck(custom_square.default, (device.requires_grad_(),),
                          test_utils=("test_schema", "test_faketensor",
                                      "test_aot_dispatch_dynamic"))
