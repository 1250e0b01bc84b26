"""Device and pinned memory, copies and pointer queries. Pointers are ints."""

import ctypes
import enum
from dataclasses import dataclass

from . import _C

__all__ = [
    "MemcpyKind",
    "MemoryType",
    "PointerAttributes",
    "copy_from_device",
    "copy_to_device",
    "device_of_pointer",
    "device_pointer",
    "free",
    "free_host",
    "kernel_pointer",
    "malloc",
    "malloc_host",
    "memcpy",
    "memcpy_async",
    "memset",
    "memset_async",
    "pointer_attributes",
]


class MemcpyKind(enum.IntEnum):
    HOST_TO_HOST = 0
    HOST_TO_DEVICE = 1
    DEVICE_TO_HOST = 2
    DEVICE_TO_DEVICE = 3
    DEFAULT = 4


class MemoryType(enum.IntEnum):
    UNREGISTERED = 0
    HOST = 1
    DEVICE = 2


@dataclass(frozen=True)
class PointerAttributes:
    type: MemoryType
    device: int
    device_pointer: int
    host_pointer: int
    base: int
    size: int


def malloc(size: int) -> int:
    """Allocate ``size`` bytes on the current device; 0 bytes gives 0."""
    return _C._malloc(size)


def free(ptr: int) -> None:
    _C._free(ptr)


def malloc_host(size: int) -> int:
    """Pinned host memory, so async copies from/to it are truly async."""
    return _C._malloc_host(size)


def free_host(ptr: int) -> None:
    _C._free_host(ptr)


def _stream_handle(stream) -> int:
    return 0 if stream is None else stream.handle


def memcpy(dst: int, src: int, count: int, kind: int = MemcpyKind.DEFAULT) -> None:
    """Copy in order on the current device's default stream; returns when done."""
    _C._memcpy(dst, src, count, int(kind))


def memcpy_async(dst: int, src: int, count: int, kind: int = MemcpyKind.DEFAULT, stream=None) -> None:
    """Copy in order on ``stream``; returns at once unless host memory is pageable."""
    _C._memcpy_async(dst, src, count, int(kind), _stream_handle(stream))


def memset(ptr: int, value: int, count: int) -> None:
    _C._memset(ptr, value, count)


def memset_async(ptr: int, value: int, count: int, stream=None) -> None:
    _C._memset_async(ptr, value, count, _stream_handle(stream))


def pointer_attributes(ptr: int) -> PointerAttributes:
    attrs = _C._pointer_get_attributes(ptr)
    attrs["type"] = MemoryType(attrs["type"])
    return PointerAttributes(**attrs)


def kernel_pointer(ptr: int) -> int:
    """The read-write kernel-view address of a device address."""
    return _C._get_kernel_pointer(ptr)


def device_pointer(kernel_ptr: int) -> int:
    """The device-view address of a kernel-view address."""
    return _C._get_device_pointer(kernel_ptr)


def device_of_pointer(ptr: int) -> int:
    """The device whose memory contains ``ptr``, or -1."""
    return _C._device_of_pointer(ptr)


def copy_to_device(dst: int, data) -> None:
    """Copy a bytes-like object to device memory at ``dst``."""
    view = memoryview(data).cast("B")
    if view.nbytes == 0:
        return
    if view.readonly:
        buf = (ctypes.c_char * view.nbytes).from_buffer_copy(view)
    else:
        buf = (ctypes.c_char * view.nbytes).from_buffer(view)
    _C._memcpy(dst, ctypes.addressof(buf), view.nbytes, int(MemcpyKind.HOST_TO_DEVICE))


def copy_from_device(src: int, count: int) -> bytes:
    """Read ``count`` bytes of device memory at ``src``."""
    if count == 0:
        return b""
    out = bytearray(count)
    buf = (ctypes.c_char * count).from_buffer(out)
    _C._memcpy(ctypes.addressof(buf), src, count, int(MemcpyKind.DEVICE_TO_HOST))
    return bytes(out)
