"""openreg's communication backend for torch.distributed: ``orccl``.

``ProcessGroupOpenReg`` (C++, ``csrc/distributed``) serves collectives on openreg tensors.
Its transport is a gloo backend made here through PyTorch's public API with the same
store, rank, size and timeout: gloo moves the device tensors' kernel views (host memory)
between processes, zero-copy, and each collective is issued on the current openreg
stream. ``register()`` (run when openreg loads) makes it openreg's default backend, so
``init_process_group()``, ``init_process_group(device_id=torch.device("openreg", i))``,
``init_process_group("orccl")`` and ``"cpu:gloo,openreg:orccl"`` all reach it.
"""

from __future__ import annotations

import torch

from . import _C

__all__ = ["BACKEND_NAME", "ProcessGroupOpenReg", "register"]

BACKEND_NAME = "orccl"
_DEVICE = "openreg"

ProcessGroupOpenReg = None  # the C++ class, once register() has bound it


# DOC START: create-backend
def _create_backend(options, backend_options=None):
    """The ``register_backend`` creator (extended API): ``options`` carries the group's
    store (already prefixed for this group and device), rank, size, timeout and name.
    ``backend_options`` may be a ``ProcessGroupGloo._Options`` for the transport."""
    from torch.distributed import PrefixStore, ProcessGroupGloo

    store = PrefixStore("gloo/", options.store)
    if backend_options is None:
        gloo = ProcessGroupGloo(store, options.group_rank, options.group_size, options.timeout)
    elif isinstance(backend_options, ProcessGroupGloo._Options):
        gloo = ProcessGroupGloo(store, options.group_rank, options.group_size, backend_options)
    else:
        raise TypeError(
            f"the '{BACKEND_NAME}' backend takes ProcessGroupGloo._Options (for its gloo "
            f"transport) as pg_options, got {type(backend_options).__name__}"
        )
    gloo.options.group_name = options.group_id
    gloo.options.global_ranks_in_group = options.global_ranks_in_group
    if _SETS_SEQUENCE_NUMBERS:
        gloo._set_sequence_number_for_group()
    return ProcessGroupOpenReg(options.group_rank, options.group_size, gloo)
# DOC END: create-backend


# DOC START: split-transport
def _split_transport(transport, store, ranks, timeout, group_name):
    """The gloo transport of a split of an orccl group (ProcessGroupOpenReg::split calls
    this): ``ranks`` of ``transport``'s group, as gloo's own split makes it (same devices
    and threads, global ranks carried over), rendezvousing through ``store``. None when
    this rank is not in ``ranks``."""
    from torch.distributed import ProcessGroupGloo

    if transport.rank() not in ranks:
        return None
    parent = transport.options
    options = ProcessGroupGloo._Options()
    options._timeout = timeout
    options._devices = parent._devices
    options._threads = parent._threads
    options.group_name = group_name
    global_ranks = list(parent.global_ranks_in_group) or list(range(transport.size()))
    options.global_ranks_in_group = [global_ranks[rank] for rank in ranks]
    gloo = ProcessGroupGloo(store, ranks.index(transport.rank()), len(ranks), options)
    if _SETS_SEQUENCE_NUMBERS:
        gloo._set_sequence_number_for_group()
    return gloo
# DOC END: split-transport


# torch 2.13 starts a gloo group's sequence numbers with this call (as its own
# _new_process_group_helper does); from 2.14 numbers always start at 0 and the call is a
# deprecated no-op that warns.
_SETS_SEQUENCE_NUMBERS = tuple(int(part) for part in torch.__version__.split(".")[:2]) < (2, 14)


def _unavailable_reason(backend) -> str:
    return (
        f"this process group has no backend for openreg tensors (backend={str(backend)!r}). "
        f"Use openreg's backend '{BACKEND_NAME}': init_process_group() with no backend, "
        f"init_process_group(device_id=torch.device('openreg', local_rank)), "
        f"init_process_group('{BACKEND_NAME}') or "
        f"init_process_group('cpu:gloo,openreg:{BACKEND_NAME}')"
    )


# DOC START: complete-group
def _complete_group(pg, backend) -> None:
    """Adjusts a process group torch.distributed has just made, in a process with openreg:

    - ``init_process_group()`` (backend "undefined") makes only the accelerator's
      backend since PyTorch 2.6; CPU tensors keep gloo, as they have without openreg:
      the transport of the openreg backend serves them directly (no second gloo).
    - A group without openreg's backend serves openreg tensors with its gloo, through an
      orccl backend over it (as gloo serves a CUDA group's CUDA tensors: e.g. FSDP2 puts
      a ``"gloo"`` program's parameters on the accelerator by default). Without gloo (a
      CPU backend of another kind) it gets a stand-in whose every collective raises an
      error naming the fix, instead of c10d's "No backend type associated with device
      type openreg".
    - Under ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` c10d wraps each backend in a
      ``_ProcessGroupWrapper``: the openreg backend is found inside it.
    - In a group asked for openreg, the CPU tensors' gloo gets the list of its group's
      global ranks if it has none (``_name_global_ranks``); CPU-only groups are left as
      they are.
    - Backends registered here get the group's name and description, which c10d gave
      the group's backends before: a group reads its name from one of its backends, and
      DeviceMesh, DTensor and functional collectives resolve groups by it.
    - With several backends and any third-party backend registered, PyTorch 2.13 leaves
      the group's default backend unset (it compares an upper-case plugin name with
      lower-case backend names): set it as intended there, and as later releases do
      (the accelerator's backend if the group was asked for it, else gloo).
    """
    from torch.distributed import ProcessGroup, ProcessGroupGloo

    cpu, openreg = torch.device("cpu"), torch.device(_DEVICE)
    name, description = pg.group_name, pg.group_desc
    devices = {device.type for device in pg._device_types}
    asked_for_openreg = _DEVICE in devices
    if asked_for_openreg:
        backend_of_openreg = _unwrapped(pg._get_backend(openreg))
        if (
            str(backend) == "undefined"
            and "cpu" not in devices
            and isinstance(backend_of_openreg, ProcessGroupOpenReg)
        ):
            pg._register_backend(cpu, ProcessGroup.BackendType.GLOO, backend_of_openreg.transport)
        if any(device.type == "cpu" for device in pg._device_types):
            _name_global_ranks(_unwrapped(pg._get_backend(cpu)))
    else:
        gloo = _unwrapped(pg._get_backend(cpu)) if "cpu" in devices else None
        if isinstance(gloo, ProcessGroupGloo):
            serves_openreg = ProcessGroupOpenReg(pg.rank(), pg.size(), gloo)
        else:
            serves_openreg = ProcessGroupOpenReg._unavailable(
                pg.rank(), pg.size(), _unavailable_reason(backend))
        pg._register_backend(openreg, ProcessGroup.BackendType.CUSTOM, serves_openreg)
    pg._set_group_name(name)
    pg._set_group_desc(description)
    if pg.name() == "undefined":
        devices = {device.type for device in pg._device_types}
        ours = _unwrapped(pg._get_backend(openreg))
        if (asked_for_openreg and isinstance(ours, ProcessGroupOpenReg)
                and ours.transport is not None):
            pg._set_default_backend(ProcessGroup.BackendType.CUSTOM)
        elif "cpu" in devices and isinstance(_unwrapped(pg._get_backend(cpu)), ProcessGroupGloo):
            pg._set_default_backend(ProcessGroup.BackendType.GLOO)
# DOC END: complete-group


def _name_global_ranks(gloo) -> None:
    """A default group's gloo has no list of global ranks: it reads them as 0..size-1
    only if it is the first gloo of the process, else as an empty list, and splitting it
    (dist.split_group, which splits every backend of a group bound to an openreg device)
    then indexes that empty list and crashes the process. The list is filled in."""
    from torch.distributed import ProcessGroupGloo

    if isinstance(gloo, ProcessGroupGloo) and not gloo.options.global_ranks_in_group:
        gloo.options.global_ranks_in_group = list(range(gloo.size()))


def _unwrapped(backend):
    """The backend itself, also when TORCH_DISTRIBUTED_DEBUG=DETAIL wrapped it."""
    from torch.distributed import distributed_c10d as c10d

    wrapper = getattr(c10d, "_ProcessGroupWrapper", None)
    if wrapper is not None and isinstance(backend, wrapper):
        return backend.wrapped_pg
    return backend


def _wrap_new_process_group_helper(c10d) -> None:
    # Every group (init_process_group, new_group, new_subgroups) is made by this helper.
    create = c10d._new_process_group_helper
    if getattr(create, "_openreg_wrapped", False):
        return

    def _new_process_group_helper(group_size, group_rank, ranks, backend, *args, **kwargs):
        pg, store = create(group_size, group_rank, ranks, backend, *args, **kwargs)
        if type(pg) is c10d.ProcessGroup:
            _complete_group(pg, backend)
        return pg, store

    _new_process_group_helper._openreg_wrapped = True
    c10d._new_process_group_helper = _new_process_group_helper


# DOC START: register
def register() -> None:
    """Registers ``orccl`` for openreg tensors (run when openreg loads; idempotent)."""
    global ProcessGroupOpenReg
    import torch.distributed as dist

    if not dist.is_available():
        return
    from torch.distributed import distributed_c10d as c10d

    _C._register_distributed_classes()
    ProcessGroupOpenReg = _C.ProcessGroupOpenReg
    dist.Backend.register_backend(
        BACKEND_NAME, _create_backend, extended_api=True, devices=[_DEVICE]
    )
    _wrap_new_process_group_helper(c10d)
# DOC END: register
