"""Nested tensors on openreg: the operators a Transformer layer applies to jagged nested
tensors (linear, relu, layer norm, scaled dot-product attention) match the CPU, forward and
backward. Attention's math path goes through strided nested tensors, which openreg runs
like sparse ones: the CPU kernel on a CPU nested tensor over the buffer's kernel view."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

LENGTHS = (3, 5, 2)
# Attention's math path builds strided nested tensors, which warn that they are a prototype.
pytestmark = pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")


def transformer_step(device):
    torch.manual_seed(0)
    sequences = [torch.randn(length, 8) for length in LENGTHS]
    tokens = torch.nested.nested_tensor([s.to(device) for s in sequences], layout=torch.jagged,
                                        requires_grad=True)
    linear, norm = nn.Linear(8, 8).to(device), nn.LayerNorm(8).to(device)
    hidden = norm(F.relu(linear(tokens)))
    heads = hidden.unflatten(-1, (2, 4)).transpose(1, 2)  # (batch, heads, jagged, 4)
    attended = F.scaled_dot_product_attention(heads, heads, heads)
    out = attended.transpose(1, 2).flatten(-2)
    out.values().pow(2).sum().backward()
    assert out.device.type == device and out.layout == torch.jagged
    return ([component.detach().cpu() for component in out.unbind()],
            [grad.cpu() for grad in tokens.grad.unbind()],
            linear.weight.grad.cpu(), norm.weight.grad.cpu())


def test_transformer_operators_on_jagged_tensors_match_cpu():
    torch.testing.assert_close(transformer_step("openreg"), transformer_step("cpu"))


def test_strided_nested_tensor_ops_match_cpu():
    # Before openreg served NestedTensorPrivateUse1 this aborted the process.
    def run(device):
        nested = torch.nested.nested_tensor([torch.arange(-3.0, 3.0).reshape(2, 3),
                                             torch.ones(4, 3)], device=device)
        assert nested.device.type == device and nested.is_nested
        result = (nested.transpose(1, 2).contiguous() * 2).relu()
        return [component.cpu() for component in result.unbind()]

    torch.testing.assert_close(run("openreg"), run("cpu"))


@pytest.mark.parametrize("target", ["cpu", "openreg:1", "openreg:0"])
def test_strided_nested_tensors_move_between_devices(target):
    components = [torch.arange(-3.0, 3.0).reshape(2, 3), torch.ones(4, 3)]
    on_device = torch.nested.nested_tensor(components, device="openreg")
    moved = on_device.to(target)
    assert moved.is_nested and moved.device == torch.device(target)
    back = torch.nested.nested_tensor(components).to(target)  # from the CPU
    assert back.is_nested and back.device == torch.device(target)
    for nested in (moved, back, on_device.cpu()):
        torch.testing.assert_close([c.cpu() for c in nested.unbind()], components)
