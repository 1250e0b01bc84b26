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
import torch  # noqa: E402

from ._version_guard import check_torch_version  # noqa: E402

check_torch_version()

from . import _C  # noqa: E402  (loads the kernels, hooks, guard and allocators)
from . import distributed, fallback, openreg  # noqa: E402
from ._registration import register_backend  # noqa: E402

__version__ = "0.1.0"
__all__ = ["fallback", "get_include", "get_library_dir"]

register_backend(openreg)
# torch.compile: Dynamo learns about openreg when Dynamo is imported (_dynamo/),
# Inductor when it first compiles (torch.openreg.__getattr__, _inductor/).
from . import _dynamo  # noqa: E402

_dynamo.install()
# torch.distributed: openreg tensors get the "orccl" backend (see distributed.py).
distributed.register()


# torch.multiprocessing sends openreg tensors by sharing their device memory. The
# reducers it registers cover CPU and CUDA only; ours handle openreg objects and pass
# every other one to torch's unchanged (see multiprocessing.py).
from . import multiprocessing as _multiprocessing  # noqa: E402

_multiprocessing._install()

from ._paths import get_include, get_library_dir  # noqa: E402
