"""openreg_torch.fallback.route_of: which route serves an operator, as registered."""

import pytest
import torch

import openreg_torch

route_of = openreg_torch.fallback.route_of


@pytest.mark.parametrize(
    ("operator", "route"),
    [
        ("aten::add.Tensor", "direct kernel"),  # a hot operator (DirectKernels.cpp)
        ("aten::mm", "direct kernel"),
        ("aten::empty.memory_format", "own kernel"),  # the minimal set
        ("aten::_copy_from", "own kernel"),
        ("aten::convolution_overrideable", "own kernel"),
        ("aten::atan2", "zero-copy fallback"),  # structured: routed to the CPU kernel
        ("aten::nonzero", "zero-copy fallback"),  # the global fallback
        ("aten::_foreach_add_.List", "zero-copy fallback"),  # whole lists at once
        ("aten::mish_backward", "zero-copy fallback"),  # the CPU's kernel, not the composite
        ("aten::linear", "composite"),  # CompositeImplicitAutograd: decomposes
        ("aten::matmul", "composite"),
    ],
)
def test_route_of_names_the_route(operator, route):
    assert route_of(operator) == route


def test_composites_with_a_cpu_kernel_give_the_cpus_bits():
    # mish_backward has both a CPU kernel and a decomposition; PyTorch gives PrivateUse1 the
    # decomposition, whose gradients differed from the CPU's in the last bit.
    generator = torch.Generator().manual_seed(0)
    x, grad = torch.randn(2, 117, generator=generator), torch.randn(2, 117, generator=generator)

    def mish_gradient(device):
        leaf = x.to(device).requires_grad_()
        torch.nn.functional.mish(leaf).backward(grad.to(device))
        return leaf.grad.cpu()

    assert torch.equal(mish_gradient("openreg"), mish_gradient("cpu"))


def test_route_of_agrees_with_the_dispatcher():
    # An own or direct kernel is a PrivateUse1 kernel registered by RegisterOpenReg.cpp;
    # a composite has none of ours.
    table = torch._C._dispatch_dump_table("aten::add.Tensor")
    line = next(line for line in table.splitlines() if line.startswith("PrivateUse1:"))
    assert "RegisterOpenReg.cpp" in line
    table = torch._C._dispatch_dump_table("aten::linear")
    assert not any(line.startswith("PrivateUse1:") and "RegisterOpenReg.cpp" in line
                   for line in table.splitlines())


def test_route_of_rejects_unknown_and_unqualified_names():
    with pytest.raises(RuntimeError, match="no operator named 'aten::no_such_op'"):
        route_of("aten::no_such_op")
    with pytest.raises(RuntimeError, match="expected a qualified operator name"):
        route_of("add.Tensor")


def test_deny_and_allow_change_the_route(run_python):
    result = run_python(
        """
        import torch, openreg_torch
        from openreg_torch import fallback
        before = fallback.route_of("aten::atan2")
        fallback.deny("aten::atan2")
        denied = fallback.route_of("aten::atan2")
        x = torch.zeros(2, device="openreg")
        try:
            torch.atan2(x, x)
            raised = False
        except NotImplementedError:
            raised = True
        fallback.allow("aten::atan2")
        print(before, "|", denied, raised, "|", fallback.route_of("aten::atan2"))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "zero-copy fallback | denied True | zero-copy fallback"


def test_deny_and_allow_replace_a_direct_kernel(run_python):
    # A per-operator registration replaces whatever served the operator: mul.Tensor's lean
    # lane is denied, then allowed onto the fallback, which computes the same.
    result = run_python(
        """
        import torch, openreg_torch
        from openreg_torch import fallback
        before = fallback.route_of("aten::mul.Tensor")
        fallback.deny("aten::mul.Tensor")
        x = torch.arange(3.0, device="openreg")
        try:
            x * x
            raised = False
        except NotImplementedError:
            raised = True
        fallback.allow("aten::mul.Tensor")
        print(before, "|", raised, "|", fallback.route_of("aten::mul.Tensor"), (x * x).tolist())
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "direct kernel | True | zero-copy fallback [0.0, 1.0, 4.0]"


def test_selective_mode_denies_what_is_not_allowed(run_python):
    result = run_python(
        """
        import openreg_torch
        from openreg_torch import fallback
        print(fallback.route_of("aten::nonzero"), "|", fallback.route_of("aten::_copy_from"))
        fallback.allow("aten::nonzero")
        print(fallback.route_of("aten::nonzero"))
        """,
        env={"OPENREG_FALLBACK": "selective"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["denied | own kernel", "zero-copy fallback"]
