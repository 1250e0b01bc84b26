"""torch.compile on openreg: what Dynamo and Inductor need to know about the device.

Nothing here is imported by ``import torch``: Inductor asks ``torch.openreg`` for
``Scheduling``, ``PythonWrapperCodegen``, ``CppWrapperCodegen`` and ``WrapperFxCodegen``
the first time it compiles a graph (``init_backend_registration``), and
``torch.openreg.__getattr__`` imports this package then. Dynamo's device interface is
registered when Dynamo itself is imported (see ``openreg_torch._dynamo``).

The kernels are Inductor's own C++ CPU kernels: openreg memory is host memory behind a
kernel view, so the code Inductor generates for the CPU runs on it unchanged, launched
through the execution layer on the current openreg stream (``kernel_launch.py``).
"""

import torch

from .._dynamo.device_interface import register_device_interface
from .device_op_overrides import OpenRegDeviceOpOverrides
from .scheduling import OpenRegScheduling
from .wrapper import OpenRegPythonWrapperCodegen
from .wrapper_cpp import OpenRegCppWrapperCodegen

__all__ = [
    "OpenRegScheduling",
    "OpenRegPythonWrapperCodegen",
    "OpenRegCppWrapperCodegen",
    "OpenRegDeviceOpOverrides",
    "register",
]

_registered = False


# DOC START: inductor-registration
def register() -> None:
    """Registers openreg with Dynamo and Inductor (idempotent)."""
    global _registered
    if _registered:
        return
    from torch._inductor.codegen.common import register_device_op_overrides

    register_device_interface()
    register_device_op_overrides("openreg", OpenRegDeviceOpOverrides())
    _registered = True
# DOC END: inductor-registration


def device_module_attribute(name: str):
    """What torch.openreg.<name> answers for the hooks Inductor looks up there."""
    register()
    if name == "Scheduling":
        return OpenRegScheduling
    if name == "PythonWrapperCodegen":
        return OpenRegPythonWrapperCodegen
    if name == "CppWrapperCodegen":
        return OpenRegCppWrapperCodegen
    if name == "WrapperFxCodegen":
        from torch._inductor.codegen.wrapper_fxir import WrapperFxCodegen

        return WrapperFxCodegen
    raise AttributeError(name)
