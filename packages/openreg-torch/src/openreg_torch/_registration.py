"""Names PrivateUse1 'openreg' and plugs the device module and helpers into torch."""

import importlib
import pkgutil
import sys
from types import ModuleType

import torch

BACKEND_NAME = "openreg"


def register_backend(device_module: ModuleType) -> None:
    # DOC START: python-registration
    torch.utils.rename_privateuse1_backend(BACKEND_NAME)
    torch._register_device_module(BACKEND_NAME, device_module)
    # tensor.openreg(), tensor.is_openreg, module.openreg(), storage.openreg(), ...
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
    )
    # DOC END: python-registration
    _alias_submodules(device_module)


def _alias_submodules(device_module: ModuleType) -> None:
    """Makes ``torch.openreg.<sub>`` name the loaded submodule, as ``torch.cuda.memory`` is.

    torch._register_device_module puts the device module alone into sys.modules: an import
    of ``torch.openreg.memory`` (or ``from torch.openreg.random import manual_seed``) would
    execute the file again as a second module whose relative imports resolve against torch
    (``from .. import _C`` is then torch._C), silently answering for nothing: zero memory,
    dropped seeds; and it would replace ``torch.openreg.memory`` for every caller."""
    public = f"torch.{BACKEND_NAME}"
    for info in pkgutil.iter_modules(device_module.__path__):
        module = importlib.import_module(f"{device_module.__name__}.{info.name}")
        sys.modules.setdefault(f"{public}.{info.name}", module)
