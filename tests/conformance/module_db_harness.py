"""Run PyTorch's module database (ModuleInfo) on openreg and compare every sample with CPU.

Used by ``test_module_db.py``. For each sample of ``info.module_inputs_func(device="cpu")``
the module is built on the CPU, and its openreg twin is a copy of it moved with
``.to("openreg")`` before either runs (so both start from the same parameters and
buffers). Inputs are built on the CPU and copied (layout and sharing kept, as in the
OpInfo harness), so both sides see the same values. A sample whose CPU run raises is
skipped; anything the CPU runs and openreg does not is a failure. The checks are

``train``         train mode: forward, then backward of a fixed random grad_output.
``eval``          the same in eval mode (modules with ``train_and_eval_differ``).
``eval_no_grad``  eval mode under ``torch.no_grad()``: the inference fast paths
                  (e.g. ``_transformer_encoder_layer_fwd``, native multi-head attention).

and each compares the outputs (values, dtype, shape, strides, that they are openreg
tensors), the gradients of the inputs and of every parameter, the module's state
afterwards (parameters and buffers such as BatchNorm's running statistics) and the
inputs after the call. Inputs are never channels_last here: openreg's convolutions
return contiguous outputs for them (docs/operators.md).
"""

from __future__ import annotations

import copy
import dataclasses
import random
import types
from typing import Any

import numpy
import torch
from torch.testing import make_tensor
from torch.testing._internal import common_utils
from torch.testing._internal.common_modules import (
    FunctionInput,
    ModuleInfo,
    ModuleInput,
    module_db,
)

import opinfo_harness as harness
from opinfo_harness import DEVICE, SEED, Mismatch, Outcome, Tolerance, compare

DTYPES = (torch.float32, torch.float64)

# module_db has no dropout module (its transformers use dropout=0.0): these ModuleInfos
# cover them, with the input shapes each dropout variant expects.
DROPOUT_SHAPES = {
    torch.nn.Dropout: (4, 10),
    torch.nn.Dropout1d: (2, 3, 8),
    torch.nn.Dropout2d: (2, 3, 4, 4),
    torch.nn.Dropout3d: (2, 3, 2, 4, 4),
    torch.nn.AlphaDropout: (4, 10),
    torch.nn.FeatureAlphaDropout: (2, 3, 4, 4),
}


def _dropout_inputs(module_info, device, dtype, requires_grad, training, **kwargs):
    shape = DROPOUT_SHAPES[module_info.module_cls]
    return [
        ModuleInput(
            constructor_input=FunctionInput(p),
            forward_input=FunctionInput(
                make_tensor(shape, device=device, dtype=dtype, requires_grad=requires_grad)
            ),
            desc=f"p={p}",
        )
        for p in (0.0, 0.5, 1.0)
    ]


DROPOUT_INFOS = [
    ModuleInfo(cls, module_inputs_func=_dropout_inputs, train_and_eval_differ=True)
    for cls in DROPOUT_SHAPES
]

# Modules drawing random numbers in forward (module_db's fractional max pools are given
# their samples). Both devices are seeded the same before each call and openreg's
# generator gives the CPU's numbers for a seed, so their results must match exactly.
RANDOM_MODULES = frozenset(info.name for info in DROPOUT_INFOS)

MODES = {  # mode -> (training, backward)
    "train": (True, True),
    "eval": (False, True),
    "eval_no_grad": (False, False),
}


def module_infos() -> list[ModuleInfo]:
    return list(module_db) + DROPOUT_INFOS


def module_samples(info: ModuleInfo, dtype: torch.dtype, training: bool) -> list[Any]:
    """The CPU samples, seeded as ModuleInfo's own tests do (``set_rng_seed``: the CPU
    generator, ``random`` and NumPy) without torch.manual_seed's cost
    (``harness.seed_compared_devices``)."""
    torch.default_generator.manual_seed(common_utils.SEED)
    random.seed(common_utils.SEED)
    numpy.random.seed(common_utils.SEED)
    samples = info.module_inputs_func(
        info, device="cpu", dtype=dtype, requires_grad=True, training=training
    )
    return [sample for sample in samples if sample.forward_input is not None]


def copy_forward_input(sample: Any, device: str) -> harness.Call:
    """The sample's forward arguments on ``device`` (fresh leaves; requires_grad kept)."""
    forward = sample.forward_input
    arguments = types.SimpleNamespace(input=None, args=forward.args, kwargs=forward.kwargs)
    return harness.copy_sample(arguments, device)


@dataclasses.dataclass
class StepResult:
    """What one forward (and backward) leaves behind, compared between the devices."""

    output: Any
    input_grads: list[torch.Tensor | None] | None = None
    param_grads: dict[str, torch.Tensor | None] | None = None
    state: dict[str, torch.Tensor] | None = None


def grad_outputs(outputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """A fixed random grad_output per output, drawn on the CPU: the same on both devices."""
    generator = torch.Generator().manual_seed(7)
    return [
        torch.randn(t.shape, generator=generator, dtype=t.dtype).to(t.device) for t in outputs
    ]


def run_step(module: torch.nn.Module, call: harness.Call, backward: bool) -> StepResult:
    # Seeded before each call: lazy modules initialise their parameters in forward, on the
    # input's device, and dropout and fractional max pooling draw random numbers.
    harness.seed_compared_devices(SEED)
    with torch.set_grad_enabled(backward):
        output = module(*call.args, **call.kwargs)
    result = StepResult(output)
    if backward:
        outputs = harness.differentiable(output)
        if outputs:
            torch.autograd.backward(outputs, grad_outputs(outputs))
        result.input_grads = [t.grad for t in call.tensors() if t.requires_grad]
        result.param_grads = {name: p.grad for name, p in module.named_parameters()}
    result.state = module.state_dict()
    return result


def _describe(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    if isinstance(error, Mismatch):
        return " ".join(" ".join(lines).split())[:500]
    return f"{type(error).__name__}: {lines[0] if lines else ''}"[:500]


class ModuleChecker:
    """Runs the checks of one ModuleInfo in one dtype over its samples."""

    def __init__(self, info: ModuleInfo, dtype: torch.dtype):
        self.info = info
        self.dtype = dtype
        self.tolerance = Tolerance(exact=info.name in RANDOM_MODULES)

    def run(self, modes: tuple[str, ...]) -> list[Outcome]:
        outcomes = []
        samples_by_training: dict[bool, list[Any]] = {}
        for mode in modes:
            training, backward = MODES[mode]
            if training not in samples_by_training:
                samples_by_training[training] = module_samples(self.info, self.dtype, training)
            for index, sample in enumerate(samples_by_training[training]):
                outcomes.append(self.guarded(mode, index, sample, training, backward))
        torch.openreg.synchronize()
        return outcomes

    def guarded(self, mode: str, index: int, sample: Any, training: bool,
                backward: bool) -> Outcome:
        try:
            skipped = self.check_sample(sample, training, backward)
        except Exception as error:  # an openreg-side error (CPU errors are caught inside)
            where = f"({sample.desc}) " if sample.desc else ""
            return Outcome(mode, index, "fail", where + _describe(error))
        if skipped is not None:
            return Outcome(mode, index, "skip", skipped)
        return Outcome(mode, index, "pass")

    def build(self, sample: Any, training: bool) -> torch.nn.Module:
        constructor = sample.constructor_input
        module = self.info.module_cls(*constructor.args, **constructor.kwargs).to(self.dtype)
        return module.train(training)

    def check_sample(self, sample: Any, training: bool, backward: bool) -> str | None:
        """None on success, a reason to skip when the CPU cannot run the sample."""
        cpu_call, dev_call = copy_forward_input(sample, "cpu"), copy_forward_input(sample, DEVICE)
        try:
            harness.seed_compared_devices(SEED)
            cpu_module = self.build(sample, training)
        except Exception as error:
            return f"CPU raises {_describe(error)}"
        # The twin copies the CPU module before it runs (forward updates buffers, and lazy
        # modules materialise their parameters there).
        dev_module = copy.deepcopy(cpu_module).to(DEVICE)
        try:
            expected = run_step(cpu_module, cpu_call, backward)
        except Exception as error:
            return f"CPU raises {_describe(error)}"
        actual = run_step(dev_module, dev_call, backward)

        tolerance = self.tolerance
        compare(expected.output, actual.output, tolerance, "output")
        if backward:
            compare(expected.input_grads, actual.input_grads, tolerance, "input grads")
            compare(expected.param_grads, actual.param_grads, tolerance, "parameter grads")
        compare(expected.state, actual.state, tolerance, "state after the step")
        harness.compare_inputs(cpu_call, dev_call, tolerance)
        return None
