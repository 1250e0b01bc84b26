"""Names PrivateUse1 'openreg' and plugs the device module and helpers into torch."""

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
