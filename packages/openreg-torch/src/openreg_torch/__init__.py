"""openreg as a PyTorch backend.

Importing this package (which `import torch` does by itself through the
``torch.backends`` entry point) loads the C++ backend, names the PrivateUse1 device
``openreg`` and installs ``torch.openreg``. Set ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` to
skip autoloading and ``import openreg_torch`` explicitly instead.
"""


def _autoload() -> None:
    """Entry point for ``torch.backends``: importing this package did the work."""


# Defined before `import torch`: importing this package first makes torch run its
# entry points, which look `_autoload` up on this (partially initialised) module.
import os  # noqa: E402

import torch  # noqa: E402

from ._version_guard import check_torch_version  # noqa: E402

check_torch_version()

from . import _C  # noqa: E402  (loads the kernels, hooks, guard and allocators)
from . import fallback, openreg  # noqa: E402
from ._registration import register_backend  # noqa: E402

__version__ = "0.1.0"
__all__ = ["fallback", "get_include", "get_library_dir"]

register_backend(openreg)

# Module.to("openreg") must keep parameters tied (e.g. a language model's embedding and
# output layer) as .to("cuda") does. PyTorch moves parameters in place only between the
# device types it lists (CPU, CUDA, MPS, XPU...), not PrivateUse1; for the others it
# makes new Parameters, one per tied use. Swapping the tensors in place (the documented
# future default) keeps them tied. Process-wide; OPENREG_SWAP_MODULE_PARAMS=0 opts out.
if os.environ.get("OPENREG_SWAP_MODULE_PARAMS", "1") != "0":
    torch.__future__.set_swap_module_params_on_conversion(True)
# After every static registration is in place, direct kernels first: operators that
# have one are not routed again (see DirectKernel.h and Fallback.h).
_C._register_direct_kernels()
_C._route_composite_ops_to_fallback()

# torch.multiprocessing sends openreg tensors by sharing their device memory. The
# reducers it registers cover CPU and CUDA only; ours handle openreg objects and pass
# every other one to torch's unchanged (see multiprocessing.py).
from . import multiprocessing as _multiprocessing  # noqa: E402

_multiprocessing._install()

from ._paths import get_include, get_library_dir  # noqa: E402
