"""Interpreter exit after a backward pass on openreg.

PyTorch's autograd engine runs the backward work of each accelerator device on a
device thread of its own. Since torch 2.13, ``torch.autograd.backward`` stashes the
caller's ``contextvars`` context in thread-local state that each GraphTask captures
(torch/autograd/graph.py, ``_engine_run_backward``). A device thread may drop the last
reference to a finished GraphTask a moment after ``backward()`` returned; if the
interpreter is already finalizing by then, releasing that Python context has to take the
GIL, Python ends the thread with ``pthread_exit`` inside a noexcept destructor, and the
process aborts ("terminate called without an active exception"). Any accelerator whose
backward runs on device threads is exposed (a program that exits right after
``backward()``: about one run in two here).

At exit, while the interpreter still runs, openreg hands every device thread it used one
more, trivial backward pass whose GraphTask holds no Python object: by the time a device
thread has run it, the thread has released every earlier GraphTask, and releasing this
one needs no GIL.
"""

from __future__ import annotations

import torch

from .. import _C


# The trivial passes' tensors stay referenced from Python until the interpreter clears
# this module: a device thread releasing its last reference to them then never has to
# free a Python object (which would need the GIL again).
_flushed: list[torch.Tensor] = []


def _used_devices() -> list[int]:
    if _C._is_in_bad_fork():
        return []
    return [index for index in range(_C._get_device_count()) if _C._has_primary_context(index)]


def flush_autograd_device_threads() -> None:
    """Let the autograd device thread of each openreg device in use finish its last
    GraphTask (registered with atexit; a no-op for programs that never used openreg)."""
    devices = _used_devices()
    if not devices:
        return
    run_backward = torch.autograd.Variable._execution_engine.run_backward
    with torch.inference_mode(False), torch.enable_grad():
        for index in devices:
            leaf = torch.zeros((), device=torch.device("openreg", index), requires_grad=True)
            output = leaf * 1
            # The engine directly, not torch.autograd.backward: no context is stashed.
            gradient = torch.ones_like(output)
            _flushed.extend((leaf, output, gradient))
            run_backward((output,), (gradient,), False, False, (), True, True)
