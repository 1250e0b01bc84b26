"""Conformance beyond op_db samples: mixing devices must raise, as on CUDA.

A non-scalar CPU tensor combined with an openreg tensor is an error on a real accelerator
("Expected all tensors to be on the same device"); zero-dim CPU tensors are allowed.
"""

from __future__ import annotations

import pytest
import torch

DEVICE = "openreg"

MIXED = {
    "mul": lambda cpu, dev: cpu * dev,
    "add": lambda cpu, dev: dev + cpu,
    "sub": lambda cpu, dev: cpu - dev,
    "mm": lambda cpu, dev: torch.mm(cpu, dev.t()),
    "cat": lambda cpu, dev: torch.cat([dev, cpu]),
    "where": lambda cpu, dev: torch.where(dev > 0, cpu, dev),
}

@pytest.mark.parametrize("name", sorted(MIXED))
def test_mixing_cpu_and_openreg_tensors_raises(name):
    cpu, dev = torch.randn(3, 4), torch.randn(3, 4, device=DEVICE)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device.*"
                       "openreg:0 and cpu.*only 0-dim CPU tensors"):
        MIXED[name](cpu, dev)


def test_cpu_indices_are_allowed_as_on_cuda():
    dev = torch.arange(12.0, device=DEVICE).reshape(3, 4)
    index = torch.tensor([2, 0])
    torch.testing.assert_close(dev[index].cpu(), dev.cpu()[index])
    dev[index] = torch.zeros(2, 4, device=DEVICE)
    assert dev[[0, 2]].abs().sum().item() == 0


# Also in the copy fallback, whose cpu_fallback would put results on the device of the
# first tensor argument (here the CPU scalar): openreg returns them on the call's device.
@pytest.mark.parametrize("name", ["mul", "add", "sub"])
def test_cpu_scalar_with_openreg_tensor_is_allowed(name):
    cpu, dev = torch.tensor(2.0), torch.randn(3, 4, device=DEVICE)
    result = MIXED[name](cpu, dev)
    assert result.device.type == DEVICE
    torch.testing.assert_close(result.cpu(), MIXED[name](cpu, dev.cpu()))
