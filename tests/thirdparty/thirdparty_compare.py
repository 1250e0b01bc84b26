"""Comparison helpers shared by the third-party tests.

Tolerances: openreg runs the CPU's own kernels on device memory, so with the same seed it
should agree with the CPU up to reduction order. The float32 defaults of assert_close
(rtol 1.3e-6, atol 1e-5) allow that and nothing more; a wrong kernel, a lost RNG state or
an optimizer that skipped a tensor is off by orders of magnitude more.
"""

from __future__ import annotations

import torch

DEVICE = torch.device("openreg")


def to_device(batch, device=DEVICE):
    """Move every tensor of a (nested) batch, as training loops do with their inputs."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {key: to_device(value, device) for key, value in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(value, device) for value in batch)
    return batch


def assert_same_tensor(actual, expected, **tolerances):
    assert actual.device.type == DEVICE.type, f"result on {actual.device}, not on openreg"
    torch.testing.assert_close(actual.detach().cpu(), expected.detach(), **tolerances)


def assert_same_state(device_module, cpu_module, **tolerances):
    """Parameters, buffers (BatchNorm statistics) and gradients, name by name."""
    device_state = dict(device_module.named_parameters())
    cpu_state = dict(cpu_module.named_parameters())
    assert device_state.keys() == cpu_state.keys()
    for name, cpu_param in cpu_state.items():
        device_param = device_state[name]
        assert_same_tensor(device_param, cpu_param, msg=lambda m, n=name: f"parameter {n}: {m}",
                           **tolerances)
        assert (device_param.grad is None) == (cpu_param.grad is None), f"gradient of {name}"
    device_buffers = dict(device_module.named_buffers())
    for name, cpu_buffer in cpu_module.named_buffers():
        assert_same_tensor(device_buffers[name], cpu_buffer,
                           msg=lambda m, n=name: f"buffer {n}: {m}", **tolerances)
