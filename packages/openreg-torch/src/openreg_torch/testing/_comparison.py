"""One way to check a computation on openreg: run it on the CPU too and compare."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import torch
from torch.utils import _pytree as pytree

__all__ = ["assert_matches_cpu"]


def _copy(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    # Same values, dtype, sizes, strides and requires_grad: a non-contiguous input stays
    # non-contiguous on the device (`.to()` would make it contiguous).
    source = tensor.detach()
    copy = torch.empty_strided(source.size(), source.stride(), dtype=source.dtype,
                               device=device)
    try:
        copy.copy_(source)
    except RuntimeError:
        if not torch._debug_has_internal_overlap(copy):
            raise
        copy = source.to(device, copy=True)  # overlapping strides (expand) cannot be written
    return copy.requires_grad_(tensor.requires_grad)


def _copies(args: tuple, device: torch.device) -> tuple:
    def copy(value):
        if not isinstance(value, torch.Tensor):
            return value
        if value.device.type != "cpu":
            raise ValueError(f"assert_matches_cpu takes CPU tensors and makes the {device} "
                             f"copies itself; got a tensor on {value.device}")
        return _copy(value, device)

    return pytree.tree_map(copy, args)


def _compare(actual: Any, expected: Any, device: torch.device, what: str, close: dict) -> None:
    actual_leaves, actual_spec = pytree.tree_flatten_with_path(actual)
    expected_leaves, expected_spec = pytree.tree_flatten_with_path(expected)
    assert actual_spec == expected_spec, (
        f"{what}: structure differs from the CPU's\n  {device}: {actual_spec}\n"
        f"  cpu: {expected_spec}")
    for (path, got), (_, want) in zip(actual_leaves, expected_leaves):
        where = f"{what}{pytree.keystr(path)}"
        if isinstance(want, torch.Tensor):
            assert isinstance(got, torch.Tensor), f"{where}: {type(got).__name__}, not a tensor"
            assert got.device.type == device.type and (
                device.index is None or got.device.index == device.index), (
                f"{where}: on {got.device}, expected on {device}")
            assert got.requires_grad == want.requires_grad, (
                f"{where}: requires_grad is {got.requires_grad} on {device}, "
                f"{want.requires_grad} on the CPU")
            torch.testing.assert_close(got.detach().cpu(), want.detach(),
                                       msg=lambda message: f"{where}: {message}", **close)
        elif isinstance(want, numbers.Number) and not isinstance(want, bool):
            torch.testing.assert_close(got, want, msg=lambda message: f"{where}: {message}",
                                       **close)
        else:
            assert got == want, f"{where}: {got!r} on {device}, {want!r} on the CPU"


def assert_matches_cpu(fn: Callable[..., Any], *args: Any, device: str | torch.device = "openreg",
                       **close: Any) -> tuple[Any, Any]:
    """Run ``fn(*args)`` on the CPU and on openreg copies of `args`; assert that both runs
    produce the same results.

    `args` holds CPU tensors anywhere in (nested) lists, tuples and dicts, and other values
    passed to both runs as they are. Each run gets its own copies of the tensors (same
    values, dtype, strides and requires_grad), so `fn` may modify them in place, and its
    arguments are compared after the call as well as what it returns.

    Checked for every tensor the device run returns (or modified): it is on `device`
    (type, and index if `device` names one), has the CPU result's requires_grad, and
    ``torch.testing.assert_close`` accepts it against the CPU result: same dtype, shape and
    values within the dtype's default tolerances. `close` passes options to assert_close
    (``rtol``, ``atol``, ``equal_nan``, ``check_stride``...). Containers must have the same
    structure; other values must be equal.

    Returns ``(cpu_result, device_result)`` for further checks.
    """
    device = torch.device(device)
    cpu_args, device_args = _copies(args, torch.device("cpu")), _copies(args, device)
    expected = fn(*cpu_args)
    actual = fn(*device_args)
    _compare(actual, expected, device, "result", close)
    _compare(device_args, cpu_args, device, "argument", close)
    return expected, actual
