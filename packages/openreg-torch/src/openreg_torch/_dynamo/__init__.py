"""Registers openreg's Dynamo device interface when Dynamo is imported, not before.

Dynamo has no hook for a PrivateUse1 backend (Inductor has: it asks torch.openreg for
its codegen classes). Importing Dynamo from ``import torch`` would cost every program
the import of Dynamo; waiting for Inductor would be too late for Dynamo's first trace
(it reads the registered stream and event classes then). So an import finder waits for
``torch._dynamo.device_interface``: when that module has run, openreg's interface is
registered and the finder removes itself. Until then it answers "not mine" to every
other import after one string comparison.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any

_DEVICE_INTERFACE = "torch._dynamo.device_interface"


def _register() -> None:
    from .device_interface import register_device_interface

    register_device_interface()


class _RegisteringLoader(importlib.abc.Loader):
    """Runs the real loader, then registers openreg with the module it loaded."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _register()

    def __getattr__(self, name: str) -> Any:
        # get_source, get_filename, ...: the real loader's (linecache, inspect).
        return getattr(self._loader, name)


class _DeviceInterfaceFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None):
        if fullname != _DEVICE_INTERFACE:
            return None
        _remove_finder()
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _RegisteringLoader(spec.loader)
        return spec


_finder = _DeviceInterfaceFinder()


def _remove_finder() -> None:
    try:
        sys.meta_path.remove(_finder)
    except ValueError:
        pass


def install() -> None:
    """Registers now if Dynamo is loaded already, else when it is."""
    if _DEVICE_INTERFACE in sys.modules:
        _register()
    elif _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
