"""Dynamo's view of openreg: the twin of torch._dynamo.device_interface.CudaInterface.

Registered under "openreg" and "openreg:N", so Dynamo recognises openreg streams and
events in traced code (``torch.openreg.stream(s)``, ``Event.record``) as it does CUDA's,
and Inductor finds the device's runtime calls.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

import torch
from torch._dynamo.device_interface import DeviceInterface, register_interface_for_device

from .. import _C


class WorkerDeviceProperties(NamedTuple):
    """What Inductor's compile workers ask of a device. Read without initialising the
    runtime: Inductor asks every registered device when its worker pool starts, also in
    programs that never use openreg."""

    name: str
    multi_processor_count: int


class OpenRegInterface(DeviceInterface):
    device = torch.openreg.device  # type: ignore[assignment]
    Event = torch.openreg.Event  # type: ignore[assignment]
    Stream = torch.openreg.Stream  # type: ignore[assignment]

    class Worker:
        @staticmethod
        def set_device(device: int) -> None:
            torch.openreg.set_device(device)

        @staticmethod
        def current_device() -> int:
            return _C._get_device()

        @staticmethod
        def get_device_properties(device: torch.types.Device = None) -> Any:
            return WorkerDeviceProperties("openreg", os.cpu_count() or 1)

    current_device = staticmethod(torch.openreg.current_device)
    set_device = staticmethod(torch.openreg.set_device)
    device_count = staticmethod(torch.openreg.device_count)
    stream = staticmethod(torch.openreg.stream)  # type: ignore[assignment]
    current_stream = staticmethod(torch.openreg.current_stream)
    set_stream = staticmethod(torch.openreg.set_stream)  # type: ignore[assignment]
    synchronize = staticmethod(torch.openreg.synchronize)
    get_device_properties = staticmethod(torch.openreg.get_device_properties)  # type: ignore[assignment]
    exchange_device = staticmethod(_C._exchange_device)  # type: ignore[assignment]
    maybe_exchange_device = staticmethod(_C._maybe_exchange_device)  # type: ignore[assignment]
    memory_allocated = staticmethod(torch.openreg.memory_allocated)
    is_bf16_supported = staticmethod(torch.openreg.is_bf16_supported)  # type: ignore[assignment]

    @staticmethod
    def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
        _C._set_stream(stream_id, device_index, device_type)

    @staticmethod
    def is_available() -> bool:
        return torch.openreg.is_available()

    @staticmethod
    def get_raw_stream(device_idx: int) -> int:
        return torch.openreg.current_stream(device_idx).native_handle

    @staticmethod
    def get_compute_capability(device: torch.types.Device = None) -> str:
        # Inductor keys cached GPU code on this; openreg runs CPU code: no capability.
        return ""


# DOC START: constant-queries
# Answers fixed for the life of a process. Dynamo cannot trace into their C++ bindings, so
# inside torch.compile(fullgraph=True) they failed ("Attempted to call function marked as
# skipped") where torch.cuda.is_available and get_device_properties are folded to
# constants. Marked as torch.compiler.assume_constant_result marks a function: Dynamo
# calls them once while tracing and uses the answer. (The public decorator cannot run
# here: Dynamo is still being imported.)
CONSTANT_QUERIES = ("device_count", "is_available", "get_device_properties",
                    "get_device_capability", "get_device_name")


def mark_constant_queries() -> None:
    for name in CONSTANT_QUERIES:
        getattr(torch.openreg, name)._dynamo_marked_constant = True
# DOC END: constant-queries


def register_device_interface() -> None:
    # DOC START: dynamo-registration
    register_interface_for_device("openreg", OpenRegInterface)
    for index in range(torch.openreg.device_count()):
        register_interface_for_device(f"openreg:{index}", OpenRegInterface)
    # DOC END: dynamo-registration
    mark_constant_queries()
