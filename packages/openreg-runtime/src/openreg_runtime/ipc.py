"""Sharing device memory with other processes, as ``cudaIpc*`` does.

A handle is ``IPC_HANDLE_SIZE`` bytes naming this process, the device and the
allocation; send it by any means and open it in another process of the same
user on this machine. Interprocess events are ``Event(interprocess=True)``.
"""

from . import _C

__all__ = [
    "IPC_HANDLE_SIZE",
    "ipc_close_mem_handle",
    "ipc_discard_mem_handle",
    "ipc_get_mem_handle",
    "ipc_mem_ref_count",
    "ipc_open_mem_handle",
]

IPC_HANDLE_SIZE: int = _C._IPC_HANDLE_SIZE


def ipc_get_mem_handle(ptr: int) -> bytes:
    """A handle for the allocation starting at ``ptr`` (a pointer ``malloc``
    returned, or one ``ipc_open_mem_handle`` returned, which hands on the
    original exporter's allocation). Each call gives a new handle."""
    return _C._ipc_get_mem_handle(ptr)


def ipc_open_mem_handle(handle: bytes) -> int:
    """Map the memory ``handle`` names; returns its device pointer, on the
    device index the exporter used. Close it with ``ipc_close_mem_handle``."""
    return _C._ipc_open_mem_handle(handle)


def ipc_close_mem_handle(ptr: int) -> None:
    """Undo one ``ipc_open_mem_handle`` of ``ptr``."""
    _C._ipc_close_mem_handle(ptr)


def ipc_mem_ref_count(ptr: int) -> "tuple[int, int]":
    """(opens held by other processes, handles not opened yet) for memory this
    process allocated; reuse it only when both are 0."""
    return _C._ipc_get_mem_ref_count(ptr)


def ipc_discard_mem_handle(handle: bytes) -> None:
    """Forget a handle of this process that will never be opened."""
    _C._ipc_discard_mem_handle(handle)
