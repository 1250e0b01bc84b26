"""Direct (unboxed) kernels for hot operators and the composite operators routed to
the CPU's kernels: same results as the CPU, same rules as the fallback."""

import pytest
import torch
import torch.nn.functional as F

import openreg_torch
from openreg_torch.testing import assert_matches_cpu, recorded_device_work

DEV = "openreg"


def test_hot_ops_have_direct_kernels():
    for op in ["aten::add.Tensor", "aten::add_.Tensor", "aten::mm", "aten::addcmul_",
               "aten::native_layer_norm", "aten::nll_loss_forward", "aten::cat",
               "aten::topk", "aten::max.dim", "aten::clamp", "aten::pow.Tensor_Scalar",
               "aten::sin_", "aten::floor", "aten::tril", "aten::native_dropout_backward"]:
        assert openreg_torch.fallback.route_of(op) == "direct kernel", op


def test_composite_ops_with_cpu_kernels_are_routed_to_the_fallback():
    for op in ["aten::native_layer_norm_backward", "aten::addr", "aten::native_group_norm",
               "aten::mode.values", "aten::_foreach_add_.List", "aten::all.dims_out"]:
        # (native_layer_norm_backward is hot enough for a direct kernel of its own.)
        assert openreg_torch.fallback.route_of(op) in ("zero-copy fallback", "direct kernel"), op
        # The dispatcher agrees: a PrivateUse1 kernel registered by openreg-torch.
        line = next(line for line in torch._C._dispatch_dump_table(op).splitlines()
                    if line.startswith("PrivateUse1:"))
        assert "RegisterOpenReg.cpp" in line, (op, line)


def strided(*shape):
    # A non-contiguous tensor (assert_matches_cpu's device copy keeps its strides).
    return torch.randn(*shape[:-1], shape[-1] * 2)[..., ::2]


CASES = {
    "add": lambda a, b: torch.add(a, b, alpha=0.5),
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b.abs() + 1),
    "maximum": torch.maximum,
    "where": lambda a, b: torch.where(a > 0, a, b),
    "mm": lambda a, b: a @ b.t(),
    "addmm": lambda a, b: torch.addmm(a[:, :1], a, b.t(), beta=0.5, alpha=2.0),
    "bmm": lambda a, b: torch.bmm(a.unsqueeze(0), b.t().unsqueeze(0)),
    "sum": lambda a, b: a.sum(1, keepdim=True) + b.mean(0),
    "amax": lambda a, b: a.amax(0),
    "unary": lambda a, b: a.exp() + b.abs().log() + b.abs().sqrt() + b.abs().add(1).rsqrt()
    + (-a).relu() + a.tanh() + a.sigmoid() + F.gelu(a) + F.silu(b) + a.pow(2),
    "softmax": lambda a, b: torch.softmax(a, 1) + torch.log_softmax(b, 0),
    "layer_norm": lambda a, b: F.layer_norm(a, (a.shape[-1],)),
    "nll": lambda a, b: F.cross_entropy(a, torch.arange(a.shape[0]).to(a.device) % a.shape[1]),
    "index_select": lambda a, b: a.index_select(0, torch.tensor([2, 0]).to(a.device)),
    "clamp_eq": lambda a, b: a.clamp_min(0) + (a == 0).float(),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_direct_kernels_match_cpu_on_strided_inputs(name):
    assert_matches_cpu(CASES[name], strided(4, 5), strided(4, 5))


@pytest.mark.parametrize("name", ["add", "mul", "unary", "softmax", "layer_norm", "nll"])
def test_direct_kernels_gradients_match_cpu(name):
    def gradients(a, b):
        return torch.autograd.grad(CASES[name](a, b).sum(), (a, b), allow_unused=True)

    a, b = torch.randn(4, 5, requires_grad=True), torch.randn(4, 5, requires_grad=True)
    assert_matches_cpu(gradients, a, b)


# The lean lane (aten/native/StructuredOnDevice.h): add, sub, mul and div run PyTorch's
# structured kernel over the openreg tensors with the CPU's loops on the kernel view; a
# call whose operands a CPU loop cannot take as they are (mixed dtypes, a CPU scalar,
# integers divided into floats) takes the direct kernel. Both must match the CPU.
LEAN_OPS = {
    "add": lambda a, b: torch.add(a, b, alpha=2),
    "sub": lambda a, b: torch.sub(a, b, alpha=3),
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
}
LEAN_OPERANDS = {
    "same shape": lambda: (torch.randn(4, 5), torch.randn(4, 5).abs() + 1),
    "broadcast": lambda: (torch.randn(4, 5), torch.randn(5).abs() + 1),
    "strided": lambda: (strided(4, 5), strided(4, 5).abs() + 1),
    "one element": lambda: (torch.randn(1), torch.randn(1).abs() + 1),
    "empty": lambda: (torch.randn(0, 5), torch.randn(5).abs() + 1),
    "parallel": lambda: (torch.randn(300_000), torch.randn(300_000).abs() + 1),
    "half": lambda: (torch.randn(6).half(), torch.randn(6).half().abs() + 1),
    "bfloat16 and one element": lambda: (torch.randn(6).bfloat16(),
                                         torch.randn(1).bfloat16().abs() + 1),
    "integers": lambda: (torch.arange(-6, 6), torch.arange(1, 13)),
    "mixed dtypes": lambda: (torch.randn(4, 5), torch.randn(4, 5).double().abs() + 1),
}


@pytest.mark.parametrize("operands", sorted(LEAN_OPERANDS))
@pytest.mark.parametrize("op", sorted(LEAN_OPS))
def test_structured_lane_matches_cpu(op, operands):
    a, b = LEAN_OPERANDS[operands]()
    assert_matches_cpu(LEAN_OPS[op], a, b)
    # In place (where the CPU accepts it: a result that casts to `a`'s dtype).
    if op != "div" or a.is_floating_point():
        assert_matches_cpu(lambda x, y: getattr(x, op + "_")(y), a, b)
    # With a 0-dim CPU tensor (the direct kernel) and a Python number (the lane's own cast).
    assert_matches_cpu(lambda x: LEAN_OPS[op](x, torch.tensor(3.0)), a)
    assert_matches_cpu(lambda x: LEAN_OPS[op](x, 3), a)


# A Python number joins the lane's TensorIterator as a CPU scalar, cast to the
# computation's dtype as the CPU's iterator casts it, after meta()'s checks (`x - True`
# is refused as on the CPU); half and bfloat16 kernels read it at full precision. Results
# must be bit-identical and errors the same, including overflowing casts.
NUMBERS = [0.5, 1 / 3, 3, -7, True, 2**40, 1e10, 1e300, 1 + 2j]
NUMBER_OPS = {
    "mul": lambda a, k: a * k,
    "add alpha": lambda a, k: torch.add(a, k, alpha=2),
    "sub": lambda a, k: a - k,
    "div": lambda a, k: a / k,
    "rsub": lambda a, k: k - a,
    "maximum": lambda a, k: torch.maximum(a, torch.tensor(k)),  # a 0-dim CPU tensor
    "mul_": lambda a, k: a.mul_(k),
    "add_": lambda a, k: a.add_(k),
    "sub_": lambda a, k: a.sub_(k),
    "div_": lambda a, k: a.div_(k),
}


def first_line(error):
    return str(error).splitlines()[0].replace("openreg:0", "cpu")


def outcome(fn, *args):
    """What fn(*args) gives: its results on the CPU with their strides on their device, or
    its error's first line."""
    try:
        result = fn(*args)
    except (RuntimeError, IndexError, ValueError, TypeError) as error:
        return first_line(error)
    tensors = [t for t in torch.utils._pytree.tree_leaves(result) if isinstance(t, torch.Tensor)]
    return [t.cpu() for t in tensors], [t.stride() for t in tensors]


def assert_same_outcome(fn, *args):
    expected = outcome(fn, *args)
    actual = outcome(fn, *[a.to(DEV) if isinstance(a, torch.Tensor) else a for a in args])
    if isinstance(expected, str) or isinstance(actual, str):
        assert actual == expected
    else:
        torch.testing.assert_close(actual[0], expected[0], rtol=0, atol=0, equal_nan=True)
        assert actual[1] == expected[1]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int32, torch.uint8, torch.bool, torch.complex64],
                         ids=str)
def test_structured_lane_python_numbers_match_cpu(dtype):
    x = torch.tensor([-3.0, -0.5, 0.0, 1e-3, 2.5, 7.0]).to(dtype)
    for k in NUMBERS:
        for name, fn in NUMBER_OPS.items():
            try:
                expected = fn(x.clone(), k)
            except RuntimeError as error:
                with pytest.raises(RuntimeError) as raised:
                    fn(x.to(DEV), k)
                assert first_line(raised.value) == first_line(error), (name, k)
                continue
            actual = fn(x.to(DEV), k)
            assert actual.device.type == DEV, (name, k)
            torch.testing.assert_close(actual.cpu(), expected, rtol=0, atol=0, equal_nan=True,
                                       msg=f"{name} with {k!r}")


# The rest of the lane: unary operators, activations and their backward, and the
# optimizers' in-place updates, over the dtypes a CPU loop takes as they are and ones it
# does not (integers into floats: the direct kernel).
LANE_UNARY = ["neg", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid"]
LANE_OTHERS = {
    "maximum": lambda a, b: torch.maximum(a, b),
    "tanh_backward": lambda a, b: torch.ops.aten.tanh_backward(a, b),
    "sigmoid_backward": lambda a, b: torch.ops.aten.sigmoid_backward(a, b),
    "silu": lambda a, b: F.silu(a),
    "relu": lambda a, b: F.relu(a) + b.t().relu_().t(),
    "silu_": lambda a, b: F.silu(a.t(), inplace=True),
    "silu_backward": lambda a, b: torch.ops.aten.silu_backward(a, b),
    "threshold_backward": lambda a, b: torch.ops.aten.threshold_backward(a, b, 0.25),
    "addcmul_": lambda a, b: a.addcmul_(b, b, value=0.5),
    "addcdiv_": lambda a, b: a.addcdiv_(b, b.abs() + 1, value=-2),
    "lerp_ scalar": lambda a, b: a.lerp_(b, 0.3),
    "lerp_ tensor": lambda a, b: a.lerp_(b, torch.full_like(b, 0.7)),
    "functional updates": lambda a, b: torch.addcmul(a, b, b, value=0.5)
    + torch.addcdiv(a, b, b.abs() + 1, value=-2) + torch.lerp(a, b, 0.3)
    + torch.lerp(a, b, torch.full_like(b, 0.7)),
}
LANE_DTYPES = [torch.float32, torch.float64, torch.bfloat16]


@pytest.mark.parametrize("dtype", LANE_DTYPES + [torch.int64], ids=str)
@pytest.mark.parametrize("op", LANE_UNARY)
def test_structured_lane_unary_ops_match_cpu(op, dtype):
    x = (torch.rand(3, 7) * 4 + 0.5).to(dtype)
    assert_matches_cpu(lambda t: getattr(torch, op)(t), x)
    assert_matches_cpu(lambda t: getattr(torch, op)(t.t()), x)  # transposed


# Unary operators taken with their in-place forms: PyTorch's CPU impl() of each only calls
# its STUB, but for floor, ceil, trunc and round of an integer tensor, which it copies
# (those calls take the direct kernel).
LANE_UNARY_PAIRS = ("sin cos tan asin acos atan sinh cosh asinh acosh atanh exp2 expm1 log2 "
                    "log10 log1p reciprocal erf erfc erfinv lgamma digamma sinc sign frac "
                    "bitwise_not floor ceil trunc round neg exp log sqrt rsqrt tanh "
                    "sigmoid").split()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.uint8,
                                   torch.bool, torch.complex64], ids=str)
@pytest.mark.parametrize("op", LANE_UNARY_PAIRS)
def test_structured_lane_unary_pairs_match_cpu(op, dtype):
    x = torch.randn(4, 6) * 3
    x[0, :4] = torch.tensor([float("nan"), float("inf"), -0.0, 1.0])
    x = x.to(dtype)
    for tensor in (x, x.t(), x[:0], x[1, 1]):  # strided, empty, 0-dim
        assert_same_outcome(getattr(torch, op), tensor)
        assert_same_outcome(lambda t: getattr(t.clone(), op + "_")(), tensor)  # errors too


@pytest.mark.parametrize("dtype", LANE_DTYPES, ids=str)
@pytest.mark.parametrize("op", sorted(LANE_OTHERS))
def test_structured_lane_other_ops_match_cpu(op, dtype):
    a, b = torch.randn(3, 7).to(dtype), torch.randn(3, 7).to(dtype)
    assert_matches_cpu(LANE_OTHERS[op], a, b)
    assert_matches_cpu(LANE_OTHERS[op], a[:, :1].expand(3, 7).contiguous(), b[0])  # broadcast


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.uint8,
                                   torch.bool], ids=str)
def test_structured_lane_relu_matches_cpu(dtype):
    # relu is clamp_min(x, 0) in the lane, as on the CPU: NaN kept, -0.0 kept, integers
    # clamped in their own dtype, bool refused with the CPU's message.
    x = torch.tensor([-3.0, -0.0, 0.0, 2.5, float("nan"), float("inf"), -float("inf"), 7.0])
    x = x.to(dtype) if dtype.is_floating_point else torch.arange(-4, 4).to(dtype)
    if dtype == torch.bool:
        for device in ("cpu", DEV):
            with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
                torch.relu(x.to(device))
        return
    for fn in (torch.relu, lambda t: t.relu_(), lambda t: t[::2].relu_()):
        expected, actual = assert_matches_cpu(fn, x, rtol=0, atol=0, equal_nan=True)
        assert torch.equal(actual.cpu().signbit(), expected.signbit())  # -0.0 kept


COMPARISON_OTHERS = {
    "zero": lambda t: 0, "half": lambda t: 0.5, "nan": lambda t: float("nan"),
    "complex": lambda t: 1 + 1j, "same dtype": lambda t: t.flip(0),
    "broadcast": lambda t: t[:1], "0-dim CPU": lambda t: torch.tensor(0.5),
    "integers": lambda t: torch.arange(6).to(t.device),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.bool,
                                   torch.complex64], ids=str)
def test_structured_lane_comparisons_match_cpu(dtype):
    # Comparisons write bool outputs from inputs of the common dtype; in place they write
    # self's dtype. Numbers are cast as for arithmetic, mixed dtypes take the direct kernel.
    x = torch.tensor([-3.0, -0.0, 0.0, 0.5, float("nan"), float("inf")]).to(dtype)
    for name, other in COMPARISON_OTHERS.items():
        for op in ("eq", "ne", "lt", "le", "gt", "ge"):
            for fn in (getattr(torch, op), lambda t, k: getattr(t, op + "_")(k)):
                try:
                    expected = fn(x.clone(), other(x))
                except RuntimeError as error:
                    with pytest.raises(RuntimeError) as raised:
                        device_x = x.to(DEV)
                        fn(device_x.clone(), other(device_x))
                    assert first_line(raised.value) == first_line(error), (op, name)
                    continue
                device_x = x.to(DEV)
                actual = fn(device_x.clone(), other(device_x))
                assert actual.device.type == DEV, (op, name)
                torch.testing.assert_close(actual.cpu(), expected, rtol=0, atol=0,
                                           equal_nan=True, msg=f"{op} with {name}")


# Structured kernels that read their tensors themselves run on kernel-view aliases.
ALIAS_LANE = {
    "mm of one tensor": lambda a, b: a @ a,
    "addmm broadcast": lambda a, b: torch.addmm(b[0], a, a.t(), beta=2, alpha=0.5),
    "bmm": lambda a, b: torch.bmm(a.expand(2, 5, 5), b.t().expand(2, 5, 5)),
    "baddbmm": lambda a, b: torch.baddbmm(a.expand(2, 5, 5), a.expand(2, 5, 5), b.expand(2, 5, 5)),
    "softmax and back": lambda a, b: torch.ops.aten._softmax_backward_data(
        b, torch.softmax(a, 1), 1, a.dtype) + torch.log_softmax(a.t(), 0),
    "log_softmax backward": lambda a, b: torch.ops.aten._log_softmax_backward_data(
        b, torch.log_softmax(a, 0), 0, a.dtype),
    "sum, mean, amax": lambda a, b: a.sum(0) + a.mean(1, keepdim=True).expand(5, 5).sum(1)
    + a.amax((0, 1)) + a.sum(0, dtype=torch.float64).float(),
    "empty reduction": lambda a, b: a[:, :0].sum(1) + a[:0].sum(0) + a[:, :0].amax(0).sum(),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("case", sorted(ALIAS_LANE))
def test_structured_alias_lane_matches_cpu(case, dtype):
    a, b = torch.randn(5, 5).to(dtype), torch.randn(5, 5).to(dtype)
    assert_matches_cpu(ALIAS_LANE[case], a, b)
    assert_matches_cpu(ALIAS_LANE[case], a.t(), b.flip(1).t())  # transposed


# The alias lane's reductions, scans, selections and cat: results (values, dtype, strides,
# NaN and -0.0 included) and errors as the CPU's, over dtypes, dims and edge shapes.
ALIAS_LANE_MORE = {
    "argmax/argmin": lambda x, d: (x.argmax(d), x.argmin(d, keepdim=True), x.argmax()),
    "any/all": lambda x, d: (x.any(d), x.all(d, keepdim=True), x.any(), x.all(),
                             torch.any(x, dim=(d,))),
    "amin/aminmax": lambda x, d: (x.amin(d), torch.aminmax(x, dim=d, keepdim=True)),
    "max/min dim": lambda x, d: (tuple(x.max(d)), tuple(x.min(d, keepdim=True))),
    "cumsum/cumprod/prod": lambda x, d: (x.cumsum(d), x.cumsum(d, dtype=torch.float64),
                                         x.cumprod(d), x.prod(d, keepdim=True)),
    "vector_norm": lambda x, d: (torch.linalg.vector_norm(x, 2, d),
                                 torch.linalg.vector_norm(x, float("inf"), d, True),
                                 torch.linalg.vector_norm(x, dtype=torch.float64)),
    "topk/sort": lambda x, d: (tuple(x.topk(1, d)), tuple(x.topk(2, d, largest=False)),
                               tuple(x.sort(d, stable=True, descending=True))),
    "gather": lambda x, d: torch.gather(x, d, torch.zeros_like(x, dtype=torch.long)),
    "cat/stack": lambda x, d: (torch.cat([x, x, x.contiguous()], d), torch.stack([x, x], d),
                               torch.cat([torch.empty(0, dtype=x.dtype, device=x.device), x])),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool],
                         ids=str)
@pytest.mark.parametrize("case", sorted(ALIAS_LANE_MORE))
def test_structured_alias_lane_reductions_and_selections_match_cpu(case, dtype):
    x = torch.randn(6, 5) * 3
    x[1, 2], x[4, 0], x[0, 1] = float("nan"), float("-inf"), -0.0
    x = x.to(dtype)
    for tensor in (x, x.t(), x[:, :0], x[0, 0]):  # strided, empty, 0-dim
        for dim in (0, -1, 2):  # 2 is out of range for each of them
            assert_same_outcome(ALIAS_LANE_MORE[case], tensor, dim)


# cat's results that are only its inputs' bytes in order are copied without aliases
# (aten/native/Shape.cpp); every other cat takes the CPU's kernel on aliases. Each case
# against the CPU: small (serial) and large (parallel over pieces) results, dims after
# size-1 ones, zero-size and legacy empty inputs, and the cases the copies must not take.
CAT_CASES = {
    "many small rows": lambda: ([torch.randn(4) for _ in range(200)], 0),
    "many rows past the grain": lambda: ([torch.randn(64, 3) for _ in range(200)], 0),
    "after size-1 dims": lambda: ([torch.randn(1, 1, n, 3) for n in (2, 0, 5)], 2),
    "legacy empty inputs": lambda: ([torch.empty(0), torch.randn(3, 2), torch.empty(0)], 0),
    "interleaved rows": lambda: ([torch.randn(3, 2), torch.randn(3, 4)], 1),
    "non-contiguous input": lambda: ([torch.randn(4, 3).t(), torch.randn(3, 4)], 0),
    "mixed dtypes": lambda: ([torch.randn(3), torch.arange(3)], 0),
    "a large piece": lambda: ([torch.randn(40000), torch.randn(5)], 0),
}


@pytest.mark.parametrize("case", sorted(CAT_CASES))
def test_cat_and_stack_match_cpu(case):
    tensors, dim = CAT_CASES[case]()
    assert_matches_cpu(lambda *ts: torch.cat(ts, dim), *tensors)
    if all(t.shape == tensors[0].shape for t in tensors):
        assert_matches_cpu(lambda *ts: torch.stack(ts, dim), *tensors)


def test_cat_copies_are_one_launch():
    pieces = [torch.full((3,), float(i), device="openreg:1") for i in range(50)]
    result, work = recorded_device_work(lambda: torch.cat(pieces))
    assert [(kind, name, device) for kind, name, device, _ in work] == [
        ("kernel", "aten::cat", 1)], work
    torch.testing.assert_close(result.cpu(), torch.arange(50.0).repeat_interleave(3))


def test_nll_loss_lane_matches_cpu_with_weights_and_ignored_targets():
    logits = torch.randn(8, 5, requires_grad=True)
    target = torch.tensor([0, 4, -100, 2, 2, 1, -100, 3])
    weight = torch.rand(5)
    for reduction in ("mean", "sum", "none"):
        def loss_and_gradient(x, t, w):  # nll_loss forward and backward
            loss = F.cross_entropy(x, t, w, reduction=reduction).exp().sum()
            return loss.detach(), torch.autograd.grad(loss, x)[0]
        assert_matches_cpu(loss_and_gradient, logits, target, weight)
    assert_same_outcome(lambda x, t: F.nll_loss(x, t), logits.detach(), target + 100)
    with pytest.raises(RuntimeError, match="openreg:0 and cpu|cpu and openreg:0"):
        F.nll_loss(logits.detach().to(DEV), target.to(DEV), weight)  # a CPU weight


CLAMP_BOUNDS = [None, 0, -1.5, float("nan"), float("inf"), True, 1e300, 1j]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.uint8],
                         ids=str)
def test_structured_lane_clamp_and_pow_match_cpu(dtype):
    x = (torch.randn(4, 5) * 4).to(dtype)
    for tensor in (x, x.t(), x[:0]):  # an empty tensor still checks its bounds
        for low in CLAMP_BOUNDS:
            for high in CLAMP_BOUNDS:
                assert_same_outcome(lambda t: torch.clamp(t, low, high), tensor)
                assert_same_outcome(lambda t: t.clone().clamp_(low, high), tensor)
            if low is not None:  # NaN bounds fill through the dispatcher: direct kernel
                assert_same_outcome(lambda t: (t.clamp_min(low), t.clamp_max(low)), tensor)
                assert_same_outcome(lambda t: t.clone().clamp_max_(low).clamp_min_(0), tensor)
        for exponent in (0, 1, 2, -1, 0.5, 3.0, True, False, 1j):  # 0 and 1: direct kernel
            assert_same_outcome(lambda t: (t ** exponent, t.clone().pow_(exponent)), tensor)


def test_structured_alias_lane_device_errors():
    a = torch.randn(3, 3, device="openreg:0")
    with pytest.raises(RuntimeError, match="openreg:0 and cpu"):
        a @ torch.randn(3, 3)
    with pytest.raises(RuntimeError, match="openreg:0 and openreg:1"):
        torch.addmm(a, a, torch.randn(3, 3, device="openreg:1"))
    with pytest.raises(RuntimeError, match="must be a matrix"):
        torch.mm(a, a[0])  # meta()'s own check, as on the CPU
    result = torch.mm(a.to("openreg:1"), a.to("openreg:1"))
    assert result.device == torch.device("openreg:1")


@pytest.mark.parametrize("op", sorted(LEAN_OPS))
def test_structured_lane_on_conjugate_and_negative_views(op):
    # PyTorch resolves the conj and neg bits before the kernel (or the lane must): the
    # results, and writes through such views, match the CPU's.
    a, b = torch.randn(4, dtype=torch.cfloat), torch.randn(4, dtype=torch.cfloat) + 2
    fn = LEAN_OPS[op]
    assert_matches_cpu(lambda x, y: fn(x.conj(), y), a, b)
    assert_matches_cpu(lambda x, y: fn(x, y.conj()), a, b)
    assert_matches_cpu(lambda x, y: fn(x.conj().imag, y.real), a, b)
    assert_matches_cpu(lambda x, y: getattr(x.conj(), op + "_")(y), a, b)
    assert_matches_cpu(lambda x, y: getattr(x.conj().imag, op + "_")(y.real), a, b)


def test_structured_lane_errors_match_cpu():
    for device in ("cpu", DEV):
        ints = torch.arange(3, device=device)
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the "
                                               "desired output type Long"):
            ints.mul_(torch.rand(3, device=device))
        with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the "
                                               r"broadcast shape \[2, 3\]"):
            torch.rand(3, device=device).add_(torch.rand(2, 3, device=device))


def test_structured_lane_on_views_with_offsets():
    # Operands that start inside their storage: their kernel-view addresses are found
    # per operand, offset included.
    assert_matches_cpu(lambda x, y: x[1:4] * y[5:8] + x[3:6].exp(), torch.randn(10),
                       torch.randn(10))
    assert_matches_cpu(lambda x, y: x[2:6].addcmul_(y[4:8], y[1:5], value=0.5),
                       torch.randn(10), torch.randn(10))
    for device in ("cpu", DEV):  # partial overlap of input and output: refused alike
        t = torch.randn(10, device=device)
        with pytest.raises(RuntimeError, match="some elements of the input tensor and"):
            t[1:].add_(t[:-1])


def test_structured_lane_is_stream_ordered_on_the_tensors_device():
    # Queued work on a side stream of openreg:1 (a large copy) must finish before the
    # lean kernel reads its result, and the kernel must run on openreg:1's stream.
    stream = torch.Stream(device="openreg:1")
    source = torch.randn(2_000_000)
    with torch.openreg.stream(stream):
        x = source.pin_memory().to("openreg:1", non_blocking=True)
        y = x * 2 + x
        z = y / 3 - x
    assert torch.openreg.current_device() == 0 and z.device == torch.device("openreg:1")
    stream.synchronize()
    torch.testing.assert_close(z.cpu(), (source * 2 + source) / 3 - source)


def test_in_place_direct_kernels_return_the_same_tensor():
    x = torch.ones(3, 4, device=DEV)
    view = x[:, 1:]
    y = torch.full((3, 3), 2.0, device=DEV)
    for update in [lambda: view.add_(y), lambda: view.mul_(y), lambda: view.addcmul_(y, y),
                   lambda: view.addcdiv_(y, y), lambda: view.lerp_(y, 0.5),
                   lambda: view.zero_(), lambda: view.fill_(7.0), lambda: view.relu_()]:
        assert update() is view
    assert x[:, 0].cpu().tolist() == [1.0, 1.0, 1.0]  # outside the view: untouched
    assert view.cpu().unique().tolist() == [7.0]


def test_direct_kernels_reject_mixed_devices():
    a = torch.randn(3, device="openreg:0")
    with pytest.raises(RuntimeError, match="openreg:0 and openreg:1"):
        a + torch.randn(3, device="openreg:1")
    with pytest.raises(RuntimeError, match="openreg:0 and cpu"):
        a * torch.randn(3)
    assert (a * torch.tensor(2.0)).device == a.device  # 0-dim CPU scalars are fine


def test_direct_kernels_run_on_the_tensors_device():
    x = torch.randn(4, 4, device="openreg:1")
    assert torch.openreg.current_device() == 0
    result = torch.mm(x, x)
    assert result.device == x.device
    assert torch.openreg.memory_allocated(1) >= result.numel() * 4
    torch.testing.assert_close(result.cpu(), x.cpu() @ x.cpu())


def test_foreach_ops_on_one_device_and_across_devices():
    cpu = [torch.randn(5) for _ in range(4)]
    for devices in (["openreg:0"] * 4, ["openreg:0", "openreg:1"] * 2):
        dev = [t.to(d) for t, d in zip(cpu, devices)]
        expected = torch._foreach_mul(cpu, 3.0)
        results = torch._foreach_mul(dev, 3.0)
        assert [r.device for r in results] == [t.device for t in dev]
        torch._foreach_add_(dev, results, alpha=0.5)
        for got, source, product in zip(dev, cpu, expected):
            torch.testing.assert_close(got.cpu(), source + 0.5 * product)
        norms = torch._foreach_norm(dev)
        assert [n.device for n in norms] == [t.device for t in dev]


def test_default_optimizers_use_foreach_and_match_cpu():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    twin = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    twin.load_state_dict(model.state_dict())
    twin.to(DEV)
    x, y = torch.randn(16, 6), torch.randn(16, 2)
    # foreach is chosen by default on openreg (a foreach-capable device), not on the CPU.
    for optimizer_type in (torch.optim.AdamW, torch.optim.SGD):
        kwargs = {"lr": 0.01, "momentum": 0.9} if optimizer_type is torch.optim.SGD else {}
        cpu_opt = optimizer_type(model.parameters(), **kwargs)
        dev_opt = optimizer_type(twin.parameters(), **kwargs)
        for _ in range(3):
            for net, opt, inputs, target in ((model, cpu_opt, x, y),
                                             (twin, dev_opt, x.to(DEV), y.to(DEV))):
                opt.zero_grad()
                F.mse_loss(net(inputs), target).backward()
                opt.step()
        for p_cpu, p_dev in zip(model.parameters(), twin.parameters()):
            torch.testing.assert_close(p_dev.detach().cpu(), p_cpu.detach())


def test_copy_and_selective_modes_have_no_direct_kernels(run_python):
    for mode in ("copy", "selective"):
        result = run_python(
            """
            import torch, openreg_torch
            route_of = openreg_torch.fallback.route_of
            print(route_of("aten::add.Tensor"), "|", route_of("aten::add.out"))
            """,
            env={"OPENREG_FALLBACK": mode},
        )
        assert result.returncode == 0, result.stderr
        # Selective: add.Tensor keeps PyTorch's structured composite, whose add.out is
        # denied; copy: the CPU kernel is routed to the copy fallback.
        expected = ("copy fallback | copy fallback" if mode == "copy"
                    else "composite | denied")
        assert result.stdout.strip() == expected


def test_unsupported_layouts_get_a_clear_error():
    # Sparse and nested results become openreg tensors (test_sparse.py); other layouts
    # (mkldnn) have no openreg form.
    x = torch.randn(3, 3, device=DEV)
    with pytest.raises(RuntimeError, match="Mkldnn tensor; openreg supports strided tensors only"):
        x.to_mkldnn()
    # Quantized results are strided but carry a quantizer an openreg tensor cannot keep:
    # refused, not returned as a tensor of a quantized dtype no operator can read.
    with pytest.warns(UserWarning, match="deprecated"), \
            pytest.raises(NotImplementedError, match="quantize_per_tensor produced a quantized"):
        torch.quantize_per_tensor(x, 0.1, 0, torch.qint8)


@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("length", [0, 1, 2, 9])
def test_kaiser_window_runs_the_stub_its_composite_calls(length, periodic):
    # kaiser_window's composite kernel calls kaiser_window_stub on an iterator over openreg
    # tensors; openreg's entry launches the CPU loop itself.
    expected = torch.kaiser_window(length, periodic, 12.0, dtype=torch.float64)
    actual = torch.kaiser_window(length, periodic, 12.0, dtype=torch.float64, device="openreg:1")
    assert actual.device == torch.device("openreg:1")
    torch.testing.assert_close(actual.cpu(), expected, rtol=0, atol=0)


# Input aliases come from a per-thread cache and are re-pointed at each use
# (KernelView.cpp): every use must see its tensor as it is now.
def test_reused_aliases_follow_their_tensors():
    torch.manual_seed(0)
    expected = torch.randn(6, 4)
    x = expected.to(DEV)
    for _ in range(3):  # the same tensor op after op, its data changing in between
        torch.testing.assert_close((x * x + x).cpu(), expected * expected + expected)
        x.add_(x)  # an input passed twice
        expected.add_(expected)
    x.t_()  # its shape changed in place
    expected.t_()
    torch.testing.assert_close((x * 2).cpu(), expected * 2)
    x.resize_(30)  # new memory; only the first 24 values are defined
    expected.resize_(30)
    torch.testing.assert_close((x * 2).cpu()[:24], expected[:24] * 2)
    for view in (lambda t: t[1:], lambda t: t[::2], lambda t: t[3:7], lambda t: t):
        torch.testing.assert_close((view(x) * 3).cpu()[:5], view(expected)[:5] * 3)
    other = torch.randn(7)
    x.set_(other.to(DEV))  # the same tensor over another tensor's memory
    torch.testing.assert_close((x * 2).cpu(), other * 2)


@pytest.mark.parametrize("make", [
    lambda: torch.quantize_per_tensor(torch.ones(3), 0.1, 0, torch.qint8).to("openreg"),
    lambda: torch.empty(3, dtype=torch.quint8, device="openreg"),
    lambda: torch._empty_affine_quantized([3], scale=0.1, zero_point=0, dtype=torch.quint8,
                                          device="openreg"),
], ids=["to", "empty", "empty_affine_quantized"])
def test_quantized_openreg_tensors_are_refused_by_name(make):
    # PyTorch's own message named a 'Quantizedopenreg' backend and its missing kernel.
    with pytest.raises(NotImplementedError, match="openreg does not support quantized tensors"):
        make()


def test_reused_aliases_follow_fresh_tensors_and_bits():
    for dtype in (torch.float32, torch.float64, torch.int32, torch.float32):
        for shape in ((1,), (3,), (2, 3)):
            # Freed and made again: likely the same addresses with another view.
            cpu = torch.arange(1, 7)[: torch.Size(shape).numel()].reshape(shape).to(dtype)
            device = cpu.to(DEV)
            torch.testing.assert_close((device + device * 2).cpu(), cpu + cpu * 2)
            del device
    z = torch.randn(4, dtype=torch.complex64)
    zd = z.to(DEV)
    for _ in range(2):  # conjugate and negative bits, on and off again
        torch.testing.assert_close((zd * 2).cpu(), z * 2)
        torch.testing.assert_close((zd.conj() * 2).cpu(), z.conj() * 2)
        torch.testing.assert_close((zd.conj().imag * 2).cpu(), z.conj().imag * 2)
    many = [torch.full((2,), float(i)) for i in range(12)]  # more tensors than cache entries
    on_device = [t.to(DEV) for t in many]
    for _ in range(2):
        total = on_device[0]
        for t in on_device[1:]:
            total = total + t
        torch.testing.assert_close(total.cpu(), torch.full((2,), 66.0))


def test_reused_aliases_are_per_thread():
    import threading

    errors = []

    def work(seed):
        try:
            cpu = torch.randn(5, generator=torch.Generator().manual_seed(seed))
            device = cpu.to(DEV)
            for _ in range(100):
                torch.testing.assert_close((device * device + device).cpu(), cpu * cpu + cpu)
        except Exception as error:  # reported below, from the main thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    assert not errors, errors
