"""Optional openreg operators, active as soon as this package is installed.

- ``torch.abs`` (functional, in-place, ``out=``) on openreg tensors runs an openreg kernel
  registered for PyTorch's dispatch stub ``abs_stub`` instead of the fallback;
- ``torch.ops.openreg.custom_abs``: a forward-only custom operator (autograd fallback,
  Python meta kernel for FakeTensor and ``torch.compile``);
- ``torch.ops.openreg.custom_square``: forward and backward registered separately (C++
  ``torch::autograd::Function``);
- :func:`differentiable_abs`: forward and backward through a Python
  ``torch.autograd.Function``.

A plain ``import torch`` imports this package through its ``torch.backends`` entry point.
It imports openreg_torch first, so the order in which torch loads the two entry points
does not matter. With ``TORCH_DEVICE_BACKEND_AUTOLOAD=0``, ``import openreg_ops_extra``.
"""


def _autoload() -> None:
    """Entry point for ``torch.backends``: importing this package did the work."""


# Defined before `import torch`: importing this package first makes torch run its
# entry points, which look `_autoload` up on this (partially initialised) module.
import torch  # noqa: E402

from ._version_guard import check_torch_version

check_torch_version()

# The backend first: the PrivateUse1 device named openreg, its allocators and guard, and
# the `openreg` operator namespace (TORCH_LIBRARY) that our fragment adds to.
import openreg_torch  # noqa: E402,F401

from . import _C  # noqa: E402  (registers the stub kernel and the custom operators)
from . import _meta  # noqa: E402,F401  (Python meta kernels of the custom operators)
from .ops import custom_abs, custom_square, differentiable_abs  # noqa: E402

__version__ = "0.1.0"
__all__ = ["custom_abs", "custom_square", "differentiable_abs"]
