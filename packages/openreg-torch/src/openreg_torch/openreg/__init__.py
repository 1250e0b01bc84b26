"""torch.openreg: the openreg device module, mirroring torch.cuda.

Device management, lazy initialisation with a bad-fork check, random number
generation (random.py) and memory management (memory.py).
"""

from typing import Any

import torch

import atexit

from .. import _C
from ._autograd_exit import flush_autograd_device_threads
from ._lazy import _is_in_bad_fork, _lazy_call, _lazy_init, is_initialized
from ._utils import _device_index
from .memory import *  # noqa: F403
from .memory import __all__ as _memory_all
from .random import *  # noqa: F403
from .random import __all__ as _random_all
from .streams import *  # noqa: F403
from .streams import __all__ as _streams_all
from ..multiprocessing import ipc_collect, ipc_memory_stats
from .tensor_meta import *  # noqa: F403
from .tensor_meta import __all__ as _tensor_meta_all

__all__ = [
    "is_available",
    "device_count",
    "current_device",
    "set_device",
    "device",
    "device_of",
    "synchronize",
    "init",
    "is_initialized",
    "get_device_name",
    "get_device_properties",
    "get_device_capability",
    "get_amp_supported_dtype",
    "is_bf16_supported",
    "is_current_stream_capturing",
    "OutOfMemoryError",
    "ipc_collect",
    "ipc_memory_stats",
    *_memory_all,
    *_random_all,
    *_streams_all,
    *_tensor_meta_all,
]


atexit.register(flush_autograd_device_threads)


def is_available() -> bool:
    """Whether an openreg device can be used. Never initialises the runtime."""
    return device_count() > 0


def device_count() -> int:
    """Number of openreg devices (OPENREG_DEVICE_COUNT, default 2). Never initialises
    the runtime; like torch.cuda's, it still reports the devices in a bad fork."""
    return _C._get_device_count()


def init() -> None:
    """Initialise openreg now rather than on first use."""
    _lazy_init()


def current_device() -> int:
    _lazy_init()
    return _C._get_device()


# DOC START: python-set-device
def set_device(device) -> None:
    """Make `device` (an index, "openreg:N" or torch.device) current on this thread."""
    index = _device_index(device)
    _C._set_device(index)
# DOC END: python-set-device


class device:
    """Context manager that makes `device` current and restores the previous one,
    even when the block raises."""

    def __init__(self, device: Any):
        self.idx = -1 if device is None else _device_index(device, lazy=False)
        self.prev_idx = -1

    def __enter__(self) -> None:
        _lazy_init()
        self.prev_idx = _C._maybe_exchange_device(self.idx)

    def __exit__(self, *exc: object) -> bool:
        self.idx = _C._maybe_exchange_device(self.prev_idx)
        return False


class device_of(device):
    """Make the device of tensor `obj` current (no-op for CPU tensors)."""

    def __init__(self, obj: torch.Tensor):
        if not isinstance(obj, torch.Tensor):
            raise TypeError(f"device_of expects a tensor, got {type(obj).__name__}")
        super().__init__(obj.get_device() if obj.device.type == "openreg" else -1)


def synchronize(device=None) -> None:
    """Wait for all work on every stream of `device` to finish."""
    _lazy_init()
    _C._synchronize(_device_index(device))


def get_device_properties(device=None) -> Any:
    """Name, total memory, processors, version and memory alignment of `device`: the
    runtime's own `openreg_runtime.DeviceProperties`."""
    import openreg_runtime  # the runtime's binding; imported on first use only

    _lazy_init()
    return openreg_runtime.get_device_properties(_device_index(device))


def get_device_capability(device=None) -> tuple[int, int]:
    """(major, minor) of `device`, as torch.cuda.get_device_capability returns."""
    properties = get_device_properties(device)
    return properties.major, properties.minor


def get_device_name(device=None) -> str:
    return get_device_properties(device).name


def get_amp_supported_dtype() -> list[torch.dtype]:
    """The dtypes torch.autocast(device_type="openreg") can cast to: CUDA's (float32 too,
    which CUDA's autocast accepts: the lower-precision ops then run in float32)."""
    return [torch.float16, torch.bfloat16, torch.float32]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True


def is_current_stream_capturing() -> bool:
    """Whether the current stream is capturing a graph: never, openreg has no graphs
    (code that asks torch.cuda this before a synchronising call can ask openreg too)."""
    return False


# Raised when device memory runs out, as torch.cuda.OutOfMemoryError (the same class).
OutOfMemoryError = torch.OutOfMemoryError


# What Inductor looks up on a PrivateUse1 device module (init_backend_registration)
# the first time it compiles: answered by openreg_torch._inductor, imported only then.
_INDUCTOR_HOOKS = ("Scheduling", "PythonWrapperCodegen", "CppWrapperCodegen", "WrapperFxCodegen")


def __getattr__(name: str) -> Any:
    # torch.utils.checkpoint reads `torch.<device>._initialized` to decide whether to
    # save and restore the device RNG state: a live view of the lazy-init flag.
    if name == "_initialized":
        return is_initialized()
    if name in _INDUCTOR_HOOKS:
        from .. import _inductor

        return _inductor.device_module_attribute(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
