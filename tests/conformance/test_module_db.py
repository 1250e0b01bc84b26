"""ModuleInfo conformance: every module_db sample that runs on the CPU gives the same result
on openreg, in train mode and, for modules whose modes differ, in eval mode (with and
without autograd). What is compared: ``module_db_harness``.

Tests: ``test_train[module-dtype]`` for every ModuleInfo of module_db (plus the dropout
modules module_db lacks), ``test_eval[module-dtype]`` for those with
``train_and_eval_differ``; float32 and float64.
"""

from __future__ import annotations

import pytest
import torch
from torch.testing._internal.common_modules import FunctionInput, ModuleInfo, ModuleInput

import module_db_harness as harness
from opinfo_harness import DEVICE, dtype_name

MODULES = harness.module_infos()
EVAL_MODULES = [info for info in MODULES if info.train_and_eval_differ]


def _cases(infos) -> list:
    return [
        pytest.param(info, dtype, id=f"{info.name}-{dtype_name(dtype)}")
        for info in infos
        for dtype in harness.DTYPES
        if dtype in info.supported_dtypes("cpu")
    ]


def _check(info: ModuleInfo, dtype: torch.dtype, modes: tuple[str, ...]) -> None:
    outcomes = harness.ModuleChecker(info, dtype).run(modes)
    failures = [o for o in outcomes if o.status == "fail"]
    if failures:
        lines = [f"  [{o.check}] sample {o.sample}: {o.message}" for o in failures[:10]]
        more = f"\n  ... ({len(failures) - 10} more)" if len(failures) > 10 else ""
        pytest.fail(f"{info.name} differs from CPU:\n" + "\n".join(lines) + more, pytrace=False)
    if all(o.status == "skip" for o in outcomes):
        pytest.skip("no sample runs on the CPU")


@pytest.mark.parametrize("info, dtype", _cases(MODULES))
def test_train(info, dtype):
    _check(info, dtype, ("train",))


@pytest.mark.parametrize("info, dtype", _cases(EVAL_MODULES))
def test_eval(info, dtype):
    _check(info, dtype, ("eval", "eval_no_grad"))


# ----------------------------------------------------------------------------------------
# The harness itself must catch what it claims to catch: modules that misbehave only on
# openreg.


def _on_device(tensor: torch.Tensor) -> bool:
    return tensor.device.type == DEVICE


class _ScaleGradOnDevice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.on_device = _on_device(x)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * (2.5 if ctx.on_device else 2)


class _OffOnDevice(torch.nn.Linear):
    def forward(self, x):
        return super().forward(x) + (1e-3 if _on_device(x) else 0)


class _InputGradOffOnDevice(torch.nn.Linear):
    def forward(self, x):
        return super().forward(_ScaleGradOnDevice.apply(x))


class _WeightGradOffOnDevice(torch.nn.Linear):
    def forward(self, x):
        return torch.nn.functional.linear(x, _ScaleGradOnDevice.apply(self.weight), self.bias)


class _BufferOffOnDevice(torch.nn.Linear):
    def __init__(self, in_features, out_features):
        super().__init__(in_features, out_features)
        self.register_buffer("running_mean", torch.zeros(in_features))

    def forward(self, x):
        self.running_mean.add_(x.detach().mean(0) + (1e-3 if _on_device(x) else 0))
        return super().forward(x)


class _RandomStreamShiftedOnDevice(torch.nn.Linear):
    def forward(self, x):
        if _on_device(x):
            torch.rand(1, device=x.device)  # one draw more than on the CPU
        return torch.nn.functional.dropout(super().forward(x), 0.5)


class _CpuResultOnDevice(torch.nn.Linear):
    def forward(self, x):
        return super().forward(x).cpu()


class _RaisesOnDevice(torch.nn.Linear):
    def forward(self, x):
        if _on_device(x):
            raise RuntimeError("not implemented for openreg")
        return super().forward(x)


def _fake_inputs(module_info, device, dtype, requires_grad, training, **kwargs):
    x = torch.randn(4, 3, device=device, dtype=dtype, requires_grad=requires_grad)
    return [ModuleInput(constructor_input=FunctionInput(3, 3), forward_input=FunctionInput(x))]


@pytest.mark.parametrize(
    "module_cls, message",
    [
        (_OffOnDevice, "output: Tensor-likes are not close"),
        (_InputGradOffOnDevice, "input grads[0]"),
        (_WeightGradOffOnDevice, "parameter grads['weight']"),
        (_BufferOffOnDevice, "state after the step['running_mean']"),
        (_RandomStreamShiftedOnDevice, "output: Tensor-likes are not close"),
        (_CpuResultOnDevice, "expected a openreg tensor"),
        (_RaisesOnDevice, "RuntimeError: not implemented for openreg"),
    ],
    ids=["output", "input-grad", "parameter-grad", "buffer", "random", "device", "raises"],
)
def test_harness_detects(module_cls, message):
    info = ModuleInfo(module_cls, module_inputs_func=_fake_inputs)
    outcomes = harness.ModuleChecker(info, torch.float32).run(("train",))
    failures = [o for o in outcomes if o.status == "fail"]
    assert failures, f"the harness missed a deliberate difference ({message})"
    assert message in failures[0].message, failures[0].message


def test_harness_compares_random_modules_exactly():
    # The same seed gives the same numbers on both devices: anything but equality is a
    # difference (e.g. masks that differ only where the input is near zero).
    dropout = next(info for info in harness.DROPOUT_INFOS if info.module_cls is torch.nn.Dropout)
    assert harness.ModuleChecker(dropout, torch.float32).tolerance.exact
