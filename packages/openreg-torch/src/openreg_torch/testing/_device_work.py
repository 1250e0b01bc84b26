"""The device work a piece of code issues, as the launch point's observers see it."""

from __future__ import annotations

from typing import Any, Callable

import torch


def recorded_device_work(fn: Callable[[], Any]) -> tuple[Any, list[tuple[str, str, int, int]]]:
    """(fn(), [(kind, name, device, bytes)] of every kernel, copy, fill and event record it
    issued, in issue order). Work issued before the call is finished first, and fn's work
    is waited for, so the list holds exactly fn's."""
    import openreg_torch

    torch.openreg.synchronize()
    openreg_torch._C._start_device_work_log()
    try:
        result = fn()
        torch.openreg.synchronize()
    finally:
        work = openreg_torch._C._stop_device_work_log()
    return result, [tuple(entry) for entry in work]
