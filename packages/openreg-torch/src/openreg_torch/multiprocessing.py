"""openreg tensors across processes: torch.multiprocessing's reductions for openreg.

An openreg tensor sent through a ``torch.multiprocessing`` Queue, Pipe, Pool or
process arguments arrives in the other process on the same device index and shares
the sender's device memory, as CUDA tensors do: the sender passes an IPC handle of
the allocation (``orIpcGetMemHandle``) and the receiver maps the same pages.

How it hooks in. ``torch.multiprocessing`` pickles tensors and storages with reducers
it registers on ``multiprocessing.reduction.ForkingPickler`` (see
``torch/multiprocessing/reductions.py``); in torch 2.13 and 2.14 they handle CPU and
CUDA only (an openreg tensor reaches ``_share_fd_cpu_`` and fails on the queue's
feeder thread, leaving the receiver waiting forever), and neither that module nor
``PrivateUse1HooksInterface`` offers an extension point. So, when openreg_torch is
imported, this module registers reducers for ``torch.Tensor``,
``torch.nn.Parameter`` and ``torch.UntypedStorage`` that handle openreg objects and
pass every other object to the reducer registered before them (torch's), unchanged.

Lifetime. The sender's storage keeps its memory from being reused while another
process has it open or a handle made for it has not been opened yet (a limbo, see
``csrc/runtime/OpenRegIpcTypes.h``); ``torch.openreg.ipc_collect()`` releases what
no process uses any more. A received tensor can be sent on: the next receiver opens
the original sender's allocation. ``torch.openreg.Event(interprocess=True)`` events
travel the same way (as ``torch.cuda.Event``'s do).

Never a hang. A failure to share an openreg tensor raises in the caller (Pipe.send,
Pool, Process.start). On a Queue the pickling runs on the queue's feeder thread,
where an exception is only printed; there the reducer sends the error instead, and
the receiver's ``get()`` raises it.
"""

from __future__ import annotations

import os
import pickle
import threading
from multiprocessing.reduction import ForkingPickler

import torch
import torch.multiprocessing.reductions as _torch_reductions

from . import _C

__all__ = ["ipc_collect", "ipc_memory_stats"]

# torch's own cache of shared storages (weak references, reset after fork); our keys
# start with "openreg" and never collide with its handles.
_shared_cache = _torch_reductions.shared_cache
_StorageWeakRef = _torch_reductions.StorageWeakRef


def ipc_collect() -> int:
    """Release the memory of shared storages this process no longer uses once no other
    process uses it either; returns how many storages are still held for others (as
    ``torch.cuda.ipc_collect``)."""
    return _C._ipc_collect()


def ipc_memory_stats(device=None) -> dict[str, int]:
    """Device memory of `device` shared with other processes, counted apart from
    ``memory_stats()`` (whose figures cover this process's own allocations only):

    * ``imported_bytes.current`` / ``.peak``, ``imported_storages.current``: storages
      received from other processes and alive here (their memory is the sender's);
    * ``limbo_bytes.current``, ``limbo_blocks.current``: blocks this process freed while
      another process still uses them (still allocated here until ``ipc_collect()``).
    """
    from .openreg._utils import _device_index

    return _C._ipc_memory_stats(_device_index(device))


# ------------------------------------------------------------------------- sending

def _share(storage: torch.UntypedStorage) -> tuple:
    device, handle, base, offset, nbytes = _C._ipc_share_storage(storage)
    if handle:
        # A tensor coming back to this process finds its storage here.
        _shared_cache[("openreg", device, base, offset, nbytes)] = _StorageWeakRef(storage)
    return (device, handle, base, offset, nbytes, os.getpid())


def _reduce_openreg_tensor(tensor: torch.Tensor):
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
            "autograd does not support crossing process boundaries. If you just want to "
            "transfer the data, call detach() on the tensor before serializing (e.g., "
            "putting it on the queue).")
    torch.utils.hooks.warn_if_has_hooks(tensor)
    if tensor.is_nested or tensor.layout != torch.strided:
        return _reduce_composite(tensor)
    return (_rebuild_tensor, (type(tensor), tensor.size(), tensor.stride(),
                              tensor.storage_offset(), tensor.dtype,
                              _share(tensor.untyped_storage()), tensor.requires_grad))


def _reduce_part(tensor: torch.Tensor) -> tuple:
    """One strided piece of a sparse or nested tensor: ours on openreg, torch's on the CPU
    (a nested tensor's sizes, strides and offsets)."""
    if tensor.device.type == "openreg":
        return _reduce_openreg_tensor(tensor)
    return _torch_reductions.reduce_tensor(tensor)


# DOC START: reduce-composite
def _reduce_composite(tensor: torch.Tensor) -> tuple:
    """Sparse and nested tensors travel as their strided pieces, as torch sends them
    (reductions.py: reduce_sparse_tensor, reduce_nested_tensor), and are put together by
    torch's own rebuild functions. torch's reducers cannot be reused whole: they reduce
    each piece with their CPU/CUDA reduce_tensor directly, not through the pickler."""
    if tensor.is_nested:
        return (_torch_reductions.rebuild_nested_tensor,
                (*_reduce_part(tensor.values()), *_reduce_part(tensor._nested_tensor_size()),
                 *_reduce_part(tensor._nested_tensor_strides()),
                 *_reduce_part(tensor._nested_tensor_storage_offsets())))
    if tensor.layout == torch.sparse_coo:
        return (_torch_reductions.rebuild_sparse_coo_tensor,
                (*_reduce_part(tensor._indices()), *_reduce_part(tensor._values()),
                 tensor.shape, tensor.is_coalesced()))
    if tensor.layout in (torch.sparse_csr, torch.sparse_bsr):
        compressed, plain = tensor.crow_indices(), tensor.col_indices()
    elif tensor.layout in (torch.sparse_csc, torch.sparse_bsc):
        compressed, plain = tensor.ccol_indices(), tensor.row_indices()
    else:
        raise RuntimeError(f"openreg cannot send a {tensor.layout} tensor to another process")
    return (_torch_reductions.rebuild_sparse_compressed_tensor,
            (*_reduce_part(compressed), *_reduce_part(plain), *_reduce_part(tensor.values()),
             tensor.shape, tensor.layout))
# DOC END: reduce-composite


def _reduce_openreg_storage(storage: torch.UntypedStorage):
    return (_rebuild_storage, _share(storage))


def _reduce_event(event):
    handle = event.ipc_handle()  # first: it gives a never-recorded event its device
    return (_rebuild_event, (event._ipc_device, handle))


def _raise_in_receiver(kind: type, message: str):
    raise kind(message)


def _reducer(openreg_reducer, previous):
    def reduce(obj):
        if obj.device.type != "openreg":
            return previous(obj)
        try:
            return openreg_reducer(obj)
        except Exception as error:
            if threading.current_thread().name != "QueueFeederThread":
                raise
            # Raising here would only print on the feeder thread and leave the receiver
            # waiting: make its get() raise instead.
            kind = type(error) if isinstance(error, (RuntimeError, ValueError, TypeError)) else RuntimeError
            return (_raise_in_receiver,
                    (kind, f"openreg: the sending process could not share a tensor: {error}"))
    return reduce


def _pickle_default(obj):
    return obj.__reduce_ex__(pickle.DEFAULT_PROTOCOL)


# DOC START: install-reducers
def _install() -> None:
    """Register the openreg reducers in front of torch's (once, at import)."""
    for cls, ours in ((torch.Tensor, _reduce_openreg_tensor),
                      (torch.nn.Parameter, _reduce_openreg_tensor),
                      (torch.UntypedStorage, _reduce_openreg_storage)):
        previous = ForkingPickler._extra_reducers.get(cls, _pickle_default)
        if getattr(previous, "_openreg", False):
            continue
        reduce = _reducer(ours, previous)
        reduce._openreg = True
        ForkingPickler.register(cls, reduce)
    # Interprocess events are openreg's own type: no reducer of torch's to chain to.
    from .openreg._ipc_event import InterprocessEvent

    ForkingPickler.register(InterprocessEvent, _reduce_event)
# DOC END: install-reducers


# ----------------------------------------------------------------------- receiving

def _from_cache(key) -> torch.UntypedStorage | None:
    ref = _shared_cache.get(key)
    return None if ref is None else torch.UntypedStorage._new_with_weak_ptr(ref.cdata)


# DOC START: rebuild-storage
def _rebuild_storage(device: int, handle: bytes, base: int, offset: int, nbytes: int,
                     sender: int) -> torch.UntypedStorage:
    from .openreg import _lazy_init

    _lazy_init()  # also refuses a child forked after openreg was initialised
    if not handle:
        return torch.UntypedStorage(nbytes, device=torch.device("openreg", device))
    if sender == os.getpid():
        # Back in the sending process: its own storage, if it still lives.
        storage = _from_cache(("openreg", device, base, offset, nbytes))
        if storage is not None:
            _C._ipc_release_unused_handle(handle)
            return storage
    try:
        here = _C._ipc_open_handle(handle)
    except RuntimeError as error:
        if "this very process" not in str(error):
            raise
        _C._ipc_release_unused_handle(handle)  # nobody will open it
        raise RuntimeError(
            "openreg: a tensor this process shared came back to it after its storage was "
            "released (or through another process); keep a reference to the original "
            "tensor instead") from error
    # Several tensors (or messages) naming one storage share one storage here.
    key = ("openreg", device, here, offset, nbytes)
    storage = _from_cache(key)
    if storage is not None:
        _C._ipc_close_handle(here)
        return storage
    try:
        storage = _C._ipc_wrap_opened_handle(device, here, offset, nbytes)
    except BaseException:
        _C._ipc_close_handle(here)
        raise
    _shared_cache[key] = _StorageWeakRef(storage)
    return storage
# DOC END: rebuild-storage


def _rebuild_event(device: int, handle: bytes):
    from .openreg._ipc_event import InterprocessEvent

    return InterprocessEvent._open(device, handle)


def _rebuild_tensor(cls, size, stride, storage_offset, dtype, storage_info, requires_grad):
    storage = _rebuild_storage(*storage_info)
    typed = torch.storage.TypedStorage(wrap_storage=storage, dtype=dtype, _internal=True)
    tensor = torch._utils._rebuild_tensor(typed, storage_offset, size, stride)
    if cls is torch.nn.Parameter:
        # Integer parameters must get requires_grad=False through the constructor.
        return torch.nn.Parameter(tensor, requires_grad=requires_grad)
    tensor.requires_grad = requires_grad
    return tensor
