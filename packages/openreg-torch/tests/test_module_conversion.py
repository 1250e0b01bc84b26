"""Module.to("openreg") and `param.data = ...` move tensors in place, as on CUDA.

openreg answers aten::_has_compatible_shallow_copy_type (ShallowCopy.cpp) instead of
setting torch.__future__'s process-wide swap flag: Parameter objects keep their
identity across devices and dtypes, so tied weights stay tied and an optimizer built
before the move still holds the module's parameters.
"""

import copy
import weakref

import pytest
import torch
from torch import nn

requires_two_devices = pytest.mark.skipif(torch.openreg.device_count() < 2,
                                          reason="needs two openreg devices")


class TiedLM(nn.Module):
    """The shape of a language model whose output layer reuses the embedding matrix."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(11, 6)
        self.hidden = nn.Linear(6, 6)
        self.head = nn.Linear(6, 11, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, tokens):
        return self.head(torch.tanh(self.hidden(self.embed(tokens))))


def test_import_sets_no_process_wide_flag():
    assert not torch.__future__.get_swap_module_params_on_conversion()
    assert not torch.__future__.get_overwrite_module_params_on_conversion()


@pytest.mark.parametrize(
    "source, target, expected",
    [
        ("cpu", "openreg:0", True),
        ("openreg:0", "cpu", True),
        ("openreg:0", "openreg:1", True),
        ("openreg", "meta", False),  # as for CPU: a meta tensor owns no data to take over
    ],
)
def test_has_compatible_shallow_copy_type(source, target, expected):
    if "openreg:1" in (source, target) and torch.openreg.device_count() < 2:
        pytest.skip("needs two openreg devices")
    a = torch.zeros(2, device=source)
    b = torch.zeros(2, device=target)
    assert torch._has_compatible_shallow_copy_type(a, b) is expected
    assert torch._has_compatible_shallow_copy_type(b, a) is expected
    # The CPU's own answer for meta is the model for ours.
    if target == "meta":
        assert not torch._has_compatible_shallow_copy_type(torch.zeros(2), b)


def test_sparse_is_not_shallow_copy_compatible_with_dense_openreg():
    sparse = torch.zeros(2, 2).to_sparse()
    dense = torch.zeros(2, 2, device="openreg")
    assert not torch._has_compatible_shallow_copy_type(dense, sparse)
    with pytest.raises(RuntimeError, match="incompatible tensor type"):
        dense.data = sparse


@pytest.mark.parametrize(
    "path", [("cpu", "openreg:0"), ("openreg:0", "cpu"), ("openreg:0", "openreg:1")],
    ids=["cpu-to-openreg", "openreg-to-cpu", "openreg0-to-openreg1"],
)
def test_param_data_assignment_moves_in_place(path):
    source, target = path
    if target == "openreg:1" and torch.openreg.device_count() < 2:
        pytest.skip("needs two openreg devices")
    values = torch.randn(3, 4)
    param = nn.Parameter(values.to(source))
    version_before = param._version
    param.data = param.data.to(target)
    assert param.device == torch.device(target)
    assert isinstance(param, nn.Parameter) and param.requires_grad
    assert param._version == version_before
    torch.testing.assert_close(param.detach().cpu(), values, rtol=0, atol=0)
    # It still works as a leaf of autograd on its new device.
    (param * 2).sum().backward()
    assert param.grad.device == torch.device(target)
    torch.testing.assert_close(param.grad.cpu(), torch.full((3, 4), 2.0))


@pytest.mark.parametrize(
    "path", [("cpu", "openreg:0"), ("openreg:0", "cpu"), ("openreg:0", "openreg:1")],
    ids=["cpu-to-openreg", "openreg-to-cpu", "openreg0-to-openreg1"],
)
def test_module_to_keeps_parameters_and_ties(path):
    source, target = path
    if target == "openreg:1" and torch.openreg.device_count() < 2:
        pytest.skip("needs two openreg devices")
    torch.manual_seed(0)
    reference = TiedLM()
    model = copy.deepcopy(reference).to(source)
    # The CPU model's gradients move along, in place, like the parameters.
    model(torch.tensor([[1, 2, 3]], device=source)).sum().backward()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    assert model.head.weight is model.embed.weight and len(params) == 3

    assert model.to(target) is model
    moved = list(model.parameters())  # the same objects, in the same order
    assert len(moved) == len(params) and all(a is b for a, b in zip(moved, params))
    assert model.head.weight is model.embed.weight
    for param, grad in zip(params, grads):
        assert param.device == torch.device(target)
        assert param.grad is grad and grad.device == torch.device(target)
    tokens = torch.tensor([[4, 1, 7]])
    torch.testing.assert_close(model(tokens.to(target)).cpu(), reference(tokens),
                               rtol=0, atol=0)


def test_tied_module_trains_as_on_cpu():
    torch.manual_seed(0)
    cpu_model = TiedLM()
    model = copy.deepcopy(cpu_model)
    # Optimizers are often built before the move; as on CUDA they keep working.
    optimizers = [torch.optim.AdamW(m.parameters(), lr=0.05) for m in (cpu_model, model)]
    model.to("openreg")
    tokens = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])
    for _ in range(3):
        for m, optimizer in zip((cpu_model, model), optimizers):
            optimizer.zero_grad()
            device = next(m.parameters()).device
            nn.functional.cross_entropy(m(tokens.to(device)).flatten(0, 1),
                                        tokens.flatten().to(device)).backward()
            optimizer.step()
    assert model.head.weight is model.embed.weight
    held = optimizers[1].param_groups[0]["params"]
    assert all(a is b for a, b in zip(held, model.parameters()))
    for param, cpu_param in zip(model.parameters(), cpu_model.parameters()):
        assert param.device.type == "openreg"
        state = optimizers[1].state[param]  # keyed by the moved parameter itself
        assert state["exp_avg"].device.type == "openreg"
        torch.testing.assert_close(param.detach().cpu(), cpu_param.detach())


def test_optimizer_state_keys_survive_the_move():
    model = nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(4, 3)).sum().backward()
    optimizer.step()
    model.to("openreg")
    # Same Parameter objects: the momentum buffers are still found under them.
    assert set(optimizer.state) == set(model.parameters())


@pytest.mark.parametrize("convert, dtype", [(nn.Module.double, torch.float64),
                                            (nn.Module.half, torch.float16)],
                         ids=["double", "half"])
def test_dtype_conversion_on_openreg(convert, dtype):
    torch.manual_seed(0)
    reference = TiedLM()
    model = copy.deepcopy(reference).to("openreg")
    params = list(model.parameters())
    refs = [weakref.ref(p) for p in params]  # as torch.compile's guards hold them
    assert convert(model) is model
    assert all(r() is p for r, p in zip(refs, model.parameters()))
    assert model.head.weight is model.embed.weight
    convert(reference)
    for param, cpu_param in zip(model.parameters(), reference.parameters()):
        assert param.dtype == dtype and param.device.type == "openreg"
        torch.testing.assert_close(param.detach().cpu(), cpu_param.detach(), rtol=0, atol=0)


@requires_two_devices
def test_module_to_second_device_then_back_to_cpu():
    torch.manual_seed(0)
    reference = TiedLM()
    model = copy.deepcopy(reference)
    params = list(model.parameters())
    for device in ("openreg:0", "openreg:1", "cpu"):
        model.to(device)
        assert all(a is b for a, b in zip(model.parameters(), params))
        assert model.head.weight is model.embed.weight
        assert {p.device for p in params} == {torch.device(device)}
    for param, cpu_param in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(param.detach(), cpu_param.detach(), rtol=0, atol=0)
