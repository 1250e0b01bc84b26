"""OpInfo conformance: every op_db sample that runs on the CPU gives the same result on openreg.

Selection (``OPENREG_OPINFO``): unset -> the representative subset
(``opinfo_harness.DEFAULT_SUBSET`` plus every op ``expected_failures.toml`` names);
``full`` -> every op of ``op_db`` supporting float32 on the CPU; or comma-separated op
names.

Tests per op: ``test_forward`` (function, method, in-place and out= variants, float32),
``test_grad`` (backward through a weighted sum of the outputs) and, in the full sweep or
with ``OPENREG_OPINFO_DTYPES=1``, ``test_forward_dtype`` (the forward variants in
float64, int64 and bool, where the op supports them on the CPU). Known differences are
listed in ``expected_failures.toml``; a listed failure that no longer happens fails the
test, so the file stays true. Pass rates: the terminal summary, or ``report.py``.
"""

from __future__ import annotations

import os

import pytest
import torch

import opinfo_harness as harness

MODE = harness.fallback_mode()
EXPECTATIONS = harness.load_expectations()
SELECTION = os.environ.get("OPENREG_OPINFO")
OPS = harness.select_ops(SELECTION)
GRAD_OPS = [op for op in OPS if op.supports_autograd]
FORWARD_CHECKS = ("forward", "method", "inplace", "out")
# The full sweep runs the other dtypes for every op of op_db (including the integer- and
# bool-only ones); OPENREG_OPINFO_DTYPES=1 runs them for the selected ops.
DTYPE_OPS = (harness.all_ops() if harness.is_full(SELECTION)
             else OPS if os.environ.get("OPENREG_OPINFO_DTYPES") else [])
DTYPE_CASES = [
    pytest.param(op, dtype, id=f"{op.full_name}-{harness.dtype_name(dtype)}")
    for op in DTYPE_OPS
    for dtype in harness.EXTRA_DTYPES
    if op.supports_dtype(dtype, "cpu")
]


def _ids(op) -> str:
    return op.full_name


def _format(failures) -> str:
    lines, seen = [], set()
    for outcome in failures:
        if (outcome.check, outcome.message) in seen:
            continue
        seen.add((outcome.check, outcome.message))
        lines.append(f"  [{outcome.check}] sample {outcome.sample}: {outcome.message}")
    more = len(failures) - len(lines)
    return "\n".join(lines[:10]) + (f"\n  ... ({more} more failing samples)" if more > 0 else "")


def _run(op, checks: tuple[str, ...], record, dtype=harness.DTYPE) -> None:
    entries = [e for e in EXPECTATIONS.get(op.full_name, []) if e.applies(MODE, dtype)]
    skipped = [e for e in entries if e.kind == "skip" and set(e.checks) & set(checks)]
    run_checks = tuple(c for c in checks if not any(c in e.checks for e in skipped))
    if not run_checks:
        pytest.skip(f"expected_failures.toml: {skipped[0].reason}")

    outcomes, _ = harness.check_op(op, entries, run_checks, MODE, dtype)
    record(op.full_name if dtype == harness.DTYPE else f"{op.full_name}:{dtype}", outcomes)

    failures = [o for o in outcomes if o.status == "fail"]
    listed = [e for e in entries if e.kind == "fail" and set(e.checks) & set(run_checks)]
    allowed = {c for e in listed for c in e.checks}
    unexpected = [o for o in failures if o.check not in allowed]
    if unexpected:
        pytest.fail(f"{op.full_name} differs from CPU ({MODE} fallback):\n{_format(unexpected)}",
                    pytrace=False)
    attempted = {o.check for o in outcomes if o.status != "skip"}
    failed = {o.check for o in failures}
    stale = (allowed & attempted) - failed
    if stale:
        pytest.fail(f"{op.full_name}: expected_failures.toml lists {sorted(stale)} as failing "
                    f"but they pass now; remove or narrow the entry", pytrace=False)
    if failures:
        pytest.xfail(f"expected_failures.toml: {listed[0].reason}")
    if not attempted:
        pytest.skip("no sample runs on the CPU for these checks")


@pytest.mark.parametrize("op", OPS, ids=_ids)
def test_forward(op, opinfo_record):
    _run(op, FORWARD_CHECKS, opinfo_record)


@pytest.mark.parametrize("op, dtype", DTYPE_CASES)
def test_forward_dtype(op, dtype, opinfo_record):
    _run(op, FORWARD_CHECKS, opinfo_record, dtype)


@pytest.mark.parametrize("op", GRAD_OPS, ids=_ids)
def test_grad(op, opinfo_record):
    _run(op, ("grad",), opinfo_record)


def test_default_subset_contains_every_listed_op():
    # Otherwise an entry that went stale is never noticed in CI.
    names = {op.full_name for op in harness.select_ops(None)}
    listed = set(EXPECTATIONS) & {op.full_name for op in harness.float32_ops()}
    assert listed <= names, sorted(listed - names)


def test_expected_failures_file_names_real_ops():
    names = {op.full_name for op in harness.all_ops()}
    unknown = sorted(set(EXPECTATIONS) - names)
    assert not unknown, f"expected_failures.toml names ops that are not OpInfos: {unknown}"


# ----------------------------------------------------------------------------------------
# The harness itself must catch what it claims to catch: fake ops that misbehave only
# on openreg.


def _fake_op(function, inplace=None, supports_out=False):
    from torch.testing._internal.common_dtype import floating_types
    from torch.testing._internal.opinfo.core import OpInfo, SampleInput

    def samples(op_info, device, dtype, requires_grad, **kwargs):
        base = torch.randn(4, 6, dtype=dtype, device=device)
        yield SampleInput(base.t().requires_grad_(requires_grad))

    return OpInfo("fake", op=function, inplace_variant=inplace, sample_inputs_func=samples,
                  dtypes=floating_types(), supports_out=supports_out)


def _on_device(tensor) -> bool:
    return tensor.device.type == harness.DEVICE


class _ScaleGradOnDevice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.device = x.device.type
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * (2.5 if ctx.device == harness.DEVICE else 2)


def _inplace_copy(x):
    return x.clone().mul_(2)


def _inplace_wrong(x):
    return x.mul_(2) if not _on_device(x) else x.mul_(2.0001)


def _mutates_on_device(x):
    y = x * 2
    if _on_device(x):
        x.add_(1)
    return y


@pytest.mark.parametrize(
    "function, inplace, checks, message",
    [
        (lambda x: x + (1e-3 if _on_device(x) else 0), None, ("forward",), "not close"),
        (lambda x: x.t() if not _on_device(x) else x.t().clone(), None, ("forward",), "aliasing"),
        (lambda x: x * 2 if not _on_device(x) else (x * 2).contiguous(), None, ("forward",),
         "strides"),
        (lambda x: x * 2 if not _on_device(x) else (x * 2).cpu(), None, ("forward",),
         "expected a openreg"),
        (_mutates_on_device, None, ("forward",), "after the call"),
        (_ScaleGradOnDevice.apply, None, ("grad",), "grad of input 0"),
        (torch.mul, lambda x, *a: x if not _on_device(x) else _inplace_copy(x), ("inplace",),
         "did not return its input"),
        (torch.mul, lambda x, *a: _inplace_wrong(x), ("inplace",), "not close"),
    ],
    ids=["values", "aliasing", "strides", "device", "mutation", "grad", "inplace-identity",
         "inplace-values"],
)
def test_harness_detects(function, inplace, checks, message):
    op = _fake_op(function, inplace)
    outcomes = harness.OpChecker(op).run(checks)
    failures = [o for o in outcomes if o.status == "fail"]
    assert failures, f"the harness missed a deliberate difference ({message})"
    assert message in failures[0].message, failures[0].message


def test_harness_detects_out_variant_difference():
    def function(x, *, out=None):
        result = x * 2
        if out is None:
            return result
        out.resize_(result.shape).copy_(result + (1 if _on_device(x) else 0))
        return out

    outcomes = harness.OpChecker(_fake_op(function, supports_out=True)).run(("forward", "out"))
    assert [o.check for o in outcomes if o.status == "fail"] == ["out"], outcomes
