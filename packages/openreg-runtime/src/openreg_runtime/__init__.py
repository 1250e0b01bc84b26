"""openreg_runtime: the openreg simulated accelerator runtime.

A small Python surface over libopenreg, named after ``torch.cuda``. Importing
does not initialise the runtime; the first call that needs it does.
"""

from ._paths import get_include, get_library_dir
from .errors import OpenRegError
from .device import (
    DeviceProperties,
    current_device,
    device,
    device_count,
    get_device_properties,
    install_fault_handler,
    ProcessUsage,
    mem_get_info,
    process_usage,
    runtime_version,
    set_device,
    stream_priority_range,
    synchronize,
)
from .memory import (
    MemcpyKind,
    MemoryType,
    PointerAttributes,
    copy_from_device,
    copy_to_device,
    device_of_pointer,
    device_pointer,
    free,
    free_host,
    kernel_pointer,
    malloc,
    malloc_host,
    memcpy,
    memcpy_async,
    memset,
    memset_async,
    pointer_attributes,
)
from .streams import Event, Stream
from .ipc import (
    IPC_HANDLE_SIZE,
    ipc_close_mem_handle,
    ipc_discard_mem_handle,
    ipc_get_mem_handle,
    ipc_mem_ref_count,
    ipc_open_mem_handle,
)

__version__ = "0.1.0"

__all__ = [
    "DeviceProperties",
    "Event",
    "IPC_HANDLE_SIZE",
    "MemcpyKind",
    "MemoryType",
    "OpenRegError",
    "PointerAttributes",
    "Stream",
    "copy_from_device",
    "copy_to_device",
    "current_device",
    "device",
    "device_count",
    "device_of_pointer",
    "device_pointer",
    "free",
    "free_host",
    "get_device_properties",
    "get_include",
    "get_library_dir",
    "install_fault_handler",
    "ipc_close_mem_handle",
    "ipc_discard_mem_handle",
    "ipc_get_mem_handle",
    "ipc_mem_ref_count",
    "ipc_open_mem_handle",
    "kernel_pointer",
    "malloc",
    "malloc_host",
    "mem_get_info",
    "process_usage",
    "ProcessUsage",
    "memcpy",
    "memcpy_async",
    "memset",
    "memset_async",
    "pointer_attributes",
    "runtime_version",
    "set_device",
    "stream_priority_range",
    "synchronize",
]
