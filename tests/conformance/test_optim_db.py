"""OptimizerInfo conformance: every optim_db optimizer takes the same steps on openreg as on
the CPU.

``test_optimizer[name]`` runs, for every config of ``info.optim_inputs_func(device="openreg")``
and every implementation (forloop and foreach where the optimizer has them, fused where it
has one: openreg is among torch's fused-kernel devices), three steps on a few small
parameters (and a complex one where the optimizer supports complex numbers), the CPU with
the same implementation as reference. The gradients are those of a quadratic loss towards
seeded targets: the same on both devices while the parameters are, and a real objective
for LBFGS, whose closure evaluates it several times a step; SparseAdam gets them as sparse
rows. After each step the parameters and the whole ``state_dict()`` (state and
param_groups) are compared with ``assert_close``'s defaults.

A config whose CPU run raises is skipped; one that fails only on openreg is a failure.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch.testing._internal.common_optimizers import OptimizerInfo, OptimizerInput, optim_db

from opinfo_harness import DEVICE, Mismatch, Tolerance, compare

STEPS = 3
TOLERANCE = Tolerance()
SHAPES = ((3, 4), (3,), (2, 5))
MATRIX_SHAPES = ((3, 4), (5, 2))  # Muon only takes 2-D parameters
COMPLEX_SHAPE = (2, 3)


def implementations(info: OptimizerInfo) -> list[tuple[str, dict, dict]]:
    """(name, openreg kwargs, CPU reference kwargs) for each implementation to compare."""
    if "foreach" in info.supported_impls:
        impls = [("forloop", {"foreach": False}), ("foreach", {"foreach": True})]
    else:
        impls = [("default", {})]
    result = [(name, kwargs, kwargs) for name, kwargs in impls]
    if "fused" in info.supported_impls:
        # The fused CPU kernel where there is one, else the plain loop.
        reference = {"fused": True} if "cpu" in info.supports_fused_on else {"foreach": False}
        result.append(("fused", {"fused": True}, reference))
    return result


def initial_values(info: OptimizerInfo, with_complex: bool) -> tuple[list, list]:
    """Seeded CPU parameters and the targets of the loss."""
    generator = torch.Generator().manual_seed(0)
    shapes = MATRIX_SHAPES if info.optim_cls is torch.optim.Muon else SHAPES
    params = [torch.randn(shape, generator=generator) for shape in shapes]
    if with_complex:
        params.append(torch.randn(COMPLEX_SHAPE, generator=generator, dtype=torch.complex64))
    targets = [torch.randn(p.shape, generator=generator, dtype=p.dtype) for p in params]
    return params, targets


class Run:
    """One optimizer on one device, stepped on demand."""

    def __init__(self, info: OptimizerInfo, kwargs: dict, device: str, params: list,
                 targets: list):
        self.info = info
        self.params = [torch.nn.Parameter(p.to(device, copy=True)) for p in params]
        self.targets = [t.to(device) for t in targets]
        # deepcopy: a config's tensor lr must not be shared between the two runs.
        self.optimizer = info.optim_cls(self.params, **copy.deepcopy(kwargs))

    def closure(self) -> torch.Tensor:
        self.optimizer.zero_grad()
        loss = sum(
            torch.view_as_real(p - t).pow(2).sum() if p.is_complex() else (p - t).pow(2).sum()
            for p, t in zip(self.params, self.targets)
        )
        loss.backward()
        if self.info.only_supports_sparse_grads:
            for p in self.params:
                # Embedding-like gradients: whole rows, the first one without a gradient.
                p.grad[0] = 0
                p.grad = p.grad.to_sparse(sparse_dim=1)
        return loss

    def step(self) -> None:
        if self.info.step_requires_closure:
            self.optimizer.step(self.closure)
        else:
            self.closure()
            self.optimizer.step()


def compare_state_dicts(cpu: dict, dev: dict, where: str) -> None:
    # Learning rates stay where the config put them (tensor lrs on the CPU).
    compare(cpu["param_groups"], dev["param_groups"], TOLERANCE, f"{where} param_groups", "cpu")
    if cpu["state"].keys() != dev["state"].keys():
        raise Mismatch(f"{where}: state for parameters {sorted(dev['state'])}, "
                       f"CPU {sorted(cpu['state'])}")
    for index, cpu_state in cpu["state"].items():
        dev_state = dev["state"][index]
        if cpu_state.keys() != dev_state.keys():
            raise Mismatch(f"{where}: state[{index}] has {sorted(dev_state)}, "
                           f"CPU {sorted(cpu_state)}")
        for name, expected in cpu_state.items():
            actual = dev_state[name]
            # Buffers shaped like the parameter live with it. Scalar counters are placed by
            # PyTorch per optimizer, as for CUDA (step on the CPU unless fused or capturable;
            # ASGD's counters and LBFGS's H_diag with the parameter): values only.
            scalar = isinstance(actual, torch.Tensor) and actual.dim() == 0
            device = actual.device.type if scalar else DEVICE
            compare(expected, actual, TOLERANCE, f"{where} state[{index}][{name!r}]", device)


def check_config(info: OptimizerInfo, config: OptimizerInput, kwargs: dict,
                 reference_kwargs: dict, with_complex: bool) -> str | None:
    """None on success, a reason to skip when the CPU cannot run it."""
    params, targets = initial_values(info, with_complex)
    try:
        cpu = Run(info, {**config.kwargs, **reference_kwargs}, "cpu", params, targets)
    except Exception as error:
        return f"CPU raises {type(error).__name__}: {error}"
    dev = Run(info, {**config.kwargs, **kwargs}, DEVICE, params, targets)
    for step in range(STEPS):
        try:
            cpu.step()
        except Exception as error:
            return f"CPU raises {type(error).__name__} at step {step}: {error}"
        dev.step()
        compare([p.detach() for p in cpu.params], [p.detach() for p in dev.params], TOLERANCE,
                f"step {step}: params")
        compare_state_dicts(cpu.optimizer.state_dict(), dev.optimizer.state_dict(),
                            f"step {step}:")
    return None


def check_optimizer(info: OptimizerInfo) -> tuple[list[str], int, int]:
    """(failures, configs run, configs skipped) over every config and implementation."""
    failures, run, skipped = [], 0, 0
    for config in info.optim_inputs_func(device=DEVICE):
        for impl, kwargs, reference_kwargs in implementations(info):
            # Fused kernels take real parameters only.
            with_complex = info.supports_complex and impl != "fused"
            label = f"{config.desc!r} [{impl}]"
            try:
                reason = check_config(info, config, kwargs, reference_kwargs, with_complex)
            except Mismatch as error:
                failures.append(f"{label}: {' '.join(str(error).split())[:400]}")
                continue
            except Exception as error:  # raised on openreg only
                message = str(error).strip().splitlines()
                failures.append(f"{label}: {type(error).__name__}: {message[0] if message else ''}")
                continue
            run += reason is None
            skipped += reason is not None
    return failures, run, skipped


@pytest.mark.parametrize("info", optim_db, ids=lambda info: info.name)
def test_optimizer(info):
    failures, run, _ = check_optimizer(info)
    if failures:
        shown = "\n".join(f"  {line}" for line in failures[:10])
        more = f"\n  ... ({len(failures) - 10} more)" if len(failures) > 10 else ""
        pytest.fail(f"{info.name} differs from CPU:\n{shown}{more}", pytrace=False)
    if not run:
        pytest.skip("no config runs on the CPU")


# ----------------------------------------------------------------------------------------
# The check itself must catch what it claims to catch: optimizers that misbehave only on
# openreg.


class _PerturbedOnDevice(torch.optim.SGD):
    """SGD whose step, on openreg only, ends with perturb(parameter)."""

    def perturb(self, parameter):
        raise NotImplementedError

    @torch.no_grad()
    def step(self, closure=None):
        super().step(closure)
        for p in self.param_groups[0]["params"]:
            if p.device.type == DEVICE:
                self.perturb(p)


class _StepOffOnDevice(_PerturbedOnDevice):
    def perturb(self, parameter):
        parameter.add_(1e-3)


class _StateOffOnDevice(_PerturbedOnDevice):
    def perturb(self, parameter):
        self.state[parameter]["momentum_buffer"].add_(1e-3)


class _StateOnCpu(torch.optim.SGD):
    @torch.no_grad()
    def step(self, closure=None):
        super().step(closure)
        for p in self.param_groups[0]["params"]:
            self.state[p]["momentum_buffer"] = self.state[p]["momentum_buffer"].cpu()


def _momentum_config(device, dtype=None):
    return [OptimizerInput(params=None, kwargs={"lr": 0.1, "momentum": 0.9}, desc="momentum")]


@pytest.mark.parametrize(
    "optim_cls, message",
    [
        (_StepOffOnDevice, "step 0: params"),
        (_StateOffOnDevice, "step 0: state[0]['momentum_buffer']"),
        (_StateOnCpu, "expected a openreg tensor"),
    ],
    ids=["params", "state", "state-device"],
)
def test_check_detects(optim_cls, message):
    info = OptimizerInfo(optim_cls, optim_inputs_func=_momentum_config, supported_impls=())
    failures, _, _ = check_optimizer(info)
    assert failures, f"the check missed a deliberate difference ({message})"
    assert message in failures[0], failures[0]
