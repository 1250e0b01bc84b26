"""Scaled dot-product attention the vendor way: openreg's _fused_sdp_choice answers
SDPBackend.OVERRIDEABLE wherever the CPU would run its fused (flash) kernel, and
_scaled_dot_product_fused_attention_overrideable (and its backward) run that kernel on
device memory. Results and gradients equal the CPU's bit for bit."""

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

MATH, FLASH, OVERRIDEABLE = (int(b) for b in (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION,
                                               SDPBackend.OVERRIDEABLE))


def randn(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def qkv(heads=(4, 4, 4), lengths=(8, 8), head_dims=(16, 16, 16), dtype=torch.float32):
    (hq, hk, hv), (lq, lk), (eq, ek, ev) = heads, lengths, head_dims
    return (randn(2, hq, lq, eq, dtype=dtype, seed=1), randn(2, hk, lk, ek, dtype=dtype, seed=2),
            randn(2, hv, lk, ev, dtype=dtype, seed=3))


# name -> (query, key, value, keyword arguments)
FUSED_CASES = {
    "plain": (*qkv(), {}),
    "causal-scale-longer-keys": (*qkv(lengths=(6, 10)), dict(is_causal=True, scale=0.3)),
    "bool-mask": (*qkv(), dict(attn_mask=randn(8, 8, seed=4) > 0)),
    "float-mask-4d": (*qkv(), dict(attn_mask=randn(2, 1, 8, 8, seed=5))),
    "gqa": (*qkv(heads=(4, 2, 2)), dict(enable_gqa=True)),
    "float64": (*qkv(dtype=torch.float64), dict(is_causal=True)),
    "heads-last-layout": (*(t.transpose(1, 2).contiguous().transpose(1, 2) for t in qkv()), {}),
}
# Cases the CPU's fused kernel does not take: openreg gives the CPU's answer (math).
MATH_CASES = {
    "dropout": (*qkv(), dict(dropout_p=0.2)),
    "mask-requires-grad": (*qkv(), dict(attn_mask=randn(8, 8, seed=6).requires_grad_())),
    "value-head-dim": (*qkv(head_dims=(16, 16, 8)), {}),
}
# Unbatched (3-D) inputs: math on torch 2.13's CPU, its fused kernel from torch 2.14 on.
UNBATCHED = (*(t[0] for t in qkv()), dict(is_causal=True))


def to(device, query, key, value, kwargs):
    """Leaf copies on `device` (requires_grad as the CPU case says) and kwargs there too."""
    tensors = [t.detach().to(device).requires_grad_(t.is_floating_point())
               for t in (query, key, value)]
    mask = kwargs.get("attn_mask")
    if mask is not None:
        kwargs = dict(kwargs, attn_mask=mask.detach().to(device).requires_grad_(mask.requires_grad))
    return tensors, kwargs


def choice(device, query, key, value, kwargs):
    (q, k, v), kwargs = to(device, query, key, value, kwargs)
    return torch._fused_sdp_choice(q, k, v, **kwargs)


def attention_and_grads(device, query, key, value, kwargs):
    (q, k, v), kwargs = to(device, query, key, value, kwargs)
    out = F.scaled_dot_product_attention(q, k, v, **kwargs)
    out.backward(torch.cos(torch.arange(out.numel(), dtype=out.dtype)).view(out.shape).to(device))
    return out, (q.grad, k.grad, v.grad)


@pytest.mark.parametrize("case", [*FUSED_CASES, *MATH_CASES, "unbatched"])
def test_choice_is_overrideable_exactly_where_the_cpu_runs_its_fused_kernel(case):
    args = {**FUSED_CASES, **MATH_CASES, "unbatched": UNBATCHED}[case]
    cpu = choice("cpu", *args)
    if case != "unbatched":
        assert cpu == (FLASH if case in FUSED_CASES else MATH), "the CPU's chooser changed"
    expected = OVERRIDEABLE if cpu == FLASH else cpu
    assert choice("openreg", *args) == expected
    # With the CPU's flash backend disabled openreg checks the fused kernel's constraints
    # itself (sdpa_kernel(OVERRIDEABLE)); it must agree with the CPU's chooser.
    if case != "unbatched":  # openreg's own check takes 4-D inputs only
        with sdpa_kernel([SDPBackend.OVERRIDEABLE, SDPBackend.MATH]):
            assert choice("openreg", *args) == expected


@pytest.mark.parametrize("case", list(FUSED_CASES))
def test_fused_attention_and_gradients_equal_the_cpu(case):
    args = FUSED_CASES[case]
    cpu_out, cpu_grads = attention_and_grads("cpu", *args)
    out, grads = attention_and_grads("openreg", *args)
    assert out.grad_fn.name() == "ScaledDotProductFusedAttentionOverrideableBackward0"
    assert out.device.type == "openreg" and out.stride() == cpu_out.stride()
    torch.testing.assert_close(out.detach().cpu(), cpu_out.detach(), rtol=0, atol=0)
    for grad, cpu_grad in zip(grads, cpu_grads):
        assert grad.device.type == "openreg"
        torch.testing.assert_close(grad.cpu(), cpu_grad, rtol=0, atol=0)


def test_sdpa_kernel_selects_among_openreg_backends():
    args = FUSED_CASES["causal-scale-longer-keys"]
    cpu_out, _ = attention_and_grads("cpu", *args)
    # OVERRIDEABLE alone: openreg checks the fused kernel's constraints itself.
    for backends, grad_fn in [
        ([SDPBackend.OVERRIDEABLE], "ScaledDotProductFusedAttentionOverrideableBackward0"),
        ([SDPBackend.FLASH_ATTENTION], "ScaledDotProductFlashAttentionForCpuBackward0"),
        ([SDPBackend.MATH], None),
    ]:
        with sdpa_kernel(backends):
            out, _ = attention_and_grads("openreg", *args)
        if grad_fn is None:  # math: a decomposition, close to the fused kernel's result
            assert "Attention" not in out.grad_fn.name()
            torch.testing.assert_close(out.detach().cpu(), cpu_out.detach())
        else:
            assert out.grad_fn.name() == grad_fn
            torch.testing.assert_close(out.detach().cpu(), cpu_out.detach(), rtol=0, atol=0)
    with sdpa_kernel([SDPBackend.OVERRIDEABLE]), pytest.raises(RuntimeError, match="No viable"):
        attention_and_grads("openreg", *MATH_CASES["dropout"])


def test_dropout_takes_the_math_path_with_the_cpu_random_stream():
    # The fused kernel has no dropout; the math path draws its mask from openreg's
    # generator, which reproduces the CPU's stream from the same seed.
    args = MATH_CASES["dropout"]
    results = {}
    for device in ("cpu", "openreg"):
        torch.manual_seed(7)
        results[device] = attention_and_grads(device, *args)
    (out, grads), (cpu_out, cpu_grads) = results["openreg"], results["cpu"]
    assert out.grad_fn.name() != "ScaledDotProductFusedAttentionOverrideableBackward0"
    torch.testing.assert_close(out.detach().cpu(), cpu_out.detach())
    for grad, cpu_grad in zip(grads, cpu_grads):
        torch.testing.assert_close(grad.cpu(), cpu_grad)
    # and the dropout is real: a fifth of the attention weights dropped changes the output
    no_dropout, _ = attention_and_grads("openreg", *args[:3], {})
    assert not torch.allclose(out, no_dropout)


def test_other_cases_match_the_cpu():
    for case, args in [("mask-requires-grad", MATH_CASES["mask-requires-grad"]),
                       ("value-head-dim", MATH_CASES["value-head-dim"]), ("unbatched", UNBATCHED)]:
        cpu_out, cpu_grads = attention_and_grads("cpu", *args)
        out, grads = attention_and_grads("openreg", *args)
        torch.testing.assert_close(out.detach().cpu(), cpu_out.detach(), msg=case)
        for grad, cpu_grad in zip(grads, cpu_grads):
            torch.testing.assert_close(grad.cpu(), cpu_grad, msg=case)


def test_overrideable_operator_rejects_what_it_cannot_compute():
    q, k, v = (t.to("openreg") for t in qkv())
    op = torch.ops.aten._scaled_dot_product_fused_attention_overrideable
    with pytest.raises(RuntimeError, match="supports no dropout"):
        op(q, k, v, dropout_p=0.5)
    with pytest.raises(RuntimeError, match="expects query, key and value of 4 dimensions"):
        op(q[0, 0], k[0, 0], v[0, 0])
    out, logsumexp, *_ = op(q, k, v)
    assert logsumexp.shape == (2, 4, 8) and logsumexp.is_contiguous()
    mask = torch.zeros(8, 8, device="openreg")
    with pytest.raises(RuntimeError, match="computes no gradient for attn_bias"):
        torch.ops.aten._scaled_dot_product_fused_attention_overrideable_backward(
            torch.ones_like(out), q, k, v, mask, [True, True, True, True], out, logsumexp,
            None, None, 8, 8, 0.0, False, torch.zeros((), dtype=torch.long),
            torch.zeros((), dtype=torch.long))


def test_overrideable_operator_takes_unbatched_inputs():
    # A 3-D call (heads, sequence, head dim) is a batch of one, gradients included.
    query, key, value = (t[1].requires_grad_() for t in qkv())
    device_leaves = [t.detach().to("openreg").requires_grad_() for t in (query, key, value)]
    mask = randn(8, 8, seed=8)
    op = torch.ops.aten._scaled_dot_product_fused_attention_overrideable
    out, logsumexp, _, _, max_q, max_k, *_ = op(*device_leaves, mask.to("openreg"))
    assert out.shape == (4, 8, 16) and logsumexp.shape == (1, 4, 8) and (max_q, max_k) == (8, 8)
    expected, _ = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        query[None], key[None], value[None], attn_mask=mask)
    torch.testing.assert_close(out.detach().cpu(), expected[0], rtol=0, atol=0)
    out.pow(2).sum().backward()
    expected[0].pow(2).sum().backward()
    for leaf, cpu_leaf in zip(device_leaves, (query, key, value)):
        torch.testing.assert_close(leaf.grad.cpu(), cpu_leaf.grad, rtol=0, atol=0)


def test_overrideable_results_keep_their_inputs_layout():
    # As the operator's meta functions allocate them (torch.compile plans buffers by
    # these layouts): the output like the query, each gradient like its input. Heads
    # split from a (batch, length, heads * dim) projection are transposed views.
    def split(x):
        return x.view(2, 8, 4, 16).transpose(1, 2).requires_grad_()

    q, k, v = (split(randn(2, 8, 64, seed=s).to("openreg")) for s in (1, 2, 3))
    out, *_ = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(q, k, v)
    assert out.stride() == q.stride()
    grads = torch.autograd.grad(out.sum(), (q, k, v))
    assert [g.stride() for g in grads] == [t.stride() for t in (q, k, v)]


@pytest.mark.parametrize("transform", ["vmap", "vmap-of-grad", "grad"])
def test_torch_func_transforms_of_attention_take_the_math_path(transform):
    # The overrideable kernel has no batching rule (vmap refused it: "Batching rule not
    # implemented for aten::_scaled_dot_product_fused_attention_overrideable"); under any
    # torch.func transform attention takes the math path, which vmap batches op by op.
    from torch.func import grad, vmap

    def attention(t):
        return F.scaled_dot_product_attention(t, t, t, is_causal=True)

    def loss(t):
        return attention(t).sin().sum()

    run = {"vmap": vmap(attention), "vmap-of-grad": vmap(grad(loss)), "grad": grad(loss)}[transform]
    samples = randn(3, 2, 4, 6, 8, seed=7)  # vmap over 3 of (batch 2, 4 heads, 6 tokens, 8 dims)
    inputs = samples if transform != "grad" else samples[0]
    expected = run(inputs)  # the CPU: its flash kernel (under vmap, sample by sample)
    result = run(inputs.to("openreg"))
    assert result.device.type == "openreg"
    torch.testing.assert_close(result.cpu(), expected, rtol=1e-5, atol=1e-5)
    # Outside a transform the same inputs still take the overrideable kernel.
    assert choice("openreg", *(samples[0],) * 3, {}) == OVERRIDEABLE
