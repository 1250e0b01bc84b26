"""One rank of the two worker processes test_distributed.py shares across its tests.

Run as ``python distributed_worker.py RANK WORLD_SIZE``. It reads one JSON request per
line on stdin ({"check": name, "ports": [free ports], "args": {...}}), runs
``check_<name>(rank, world_size, **args)`` (whose process groups rendezvous on those
ports, one per init_process_group), and answers one JSON line ({"ok": ..., "error":
traceback}) on its original stdout. Everything else the process prints goes to stderr.
Every check makes and destroys its own process groups, so one failing check leaves the
next one a clean slate.
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import faulthandler
import gc
import json
import os
import signal
import sys
import time
import traceback
import weakref

import torch
import torch.distributed as dist
from torch.testing import assert_close

RANK = int(sys.argv[1]) if __name__ == "__main__" else 0
WORLD = int(sys.argv[2]) if __name__ == "__main__" else 1
SHORT = datetime.timedelta(seconds=20)


def device(rank=None):
    return torch.device("openreg", RANK if rank is None else rank)


PORTS = iter(())


def init(backend=None, **kwargs):
    """init_process_group as users call it (env://), on a fresh port each time: a port
    reused right after destroy_process_group may still reach the previous store."""
    os.environ["MASTER_PORT"] = str(next(PORTS))
    kwargs.setdefault("timeout", SHORT)
    dist.init_process_group(backend, rank=RANK, world_size=WORLD, **kwargs)


def data(rank, shape=(4, 6), dtype=torch.float32):
    """Deterministic per-rank input, computed the same way by every rank."""
    generator = torch.Generator().manual_seed(1234 + rank)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=generator).to(dtype)
    low = 0 if dtype == torch.uint8 else -50
    return torch.randint(low, 50, shape, generator=generator, dtype=dtype)


def expect_error(fn, *fragments, error=Exception):
    try:
        fn()
    except error as exc:
        message = str(exc)
        for fragment in fragments:
            assert fragment in message, f"{fragment!r} not in error: {message}"
        return message
    raise AssertionError(f"no error raised (expected one mentioning {fragments})")


# ----------------------------------------------------------------- registration


def check_registered(rank, world):
    assert dist.get_default_backend_for_device("openreg") == "orccl"
    assert "orccl" in dist.Backend.backend_list
    assert dist.Backend.default_device_backend_map["cpu"] == "gloo"


def check_init_default(rank, world):
    """init_process_group(): openreg tensors on orccl, CPU tensors on gloo."""
    init()
    try:
        pg = dist.group.WORLD
        assert {d.type for d in pg._device_types} == {"cpu", "openreg"}, pg._device_types
        assert type(pg._get_backend(torch.device("cpu"))).__name__ == "ProcessGroupGloo"
        assert pg._get_backend(torch.device("openreg")).name() == "orccl"
        # The default backend: gloo with PyTorch 2.13, the accelerator's (type CUSTOM,
        # named "custom") from 2.14 on.
        assert pg.name() in ("gloo", "custom"), pg.name()
        cpu = data(rank)
        dev = data(rank).to(device())
        dist.all_reduce(cpu)
        dist.all_reduce(dev)
        expected = sum(data(r) for r in range(world))
        assert_close(cpu, expected)
        assert_close(dev.cpu(), expected)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def check_init_device_id(rank, world):
    init(device_id=torch.device("openreg", rank))
    try:
        pg = dist.group.WORLD
        assert pg.bound_device_id == device(), pg.bound_device_id
        assert dist.get_backend() == "orccl"
        t = torch.full((3,), float(rank + 1), device=device())
        dist.all_reduce(t)
        assert_close(t.cpu(), torch.full((3,), float(sum(range(1, world + 1)))))
        dist.barrier()
        # Objects travel through openreg tensors: the group has no CPU backend.
        objects = [None] * world
        dist.all_gather_object(objects, {"rank": rank})
        assert objects == [{"rank": r} for r in range(world)]
        # Sparse tensors on a group with only orccl (no CPU backend to fall back on).
        sparse_all_reduce(rank, world, gloo_reference=False)
        ddp_with_sparse_embedding(rank, world)
    finally:
        dist.destroy_process_group()


def check_init_named(rank, world):
    init("orccl")
    try:
        assert dist.get_backend() == "orccl"
        assert {d.type for d in dist.group.WORLD._device_types} == {"openreg"}
        t = data(rank).to(device())
        dist.broadcast(t, src=1)
        assert_close(t.cpu(), data(1))
    finally:
        dist.destroy_process_group()


def check_init_pair(rank, world):
    init("cpu:gloo,openreg:orccl")
    try:
        assert dist.group.WORLD.name() == "custom"  # orccl's type, not "undefined"
        cpu, dev = data(rank), data(rank).to(device())
        dist.all_reduce(cpu, op=dist.ReduceOp.MAX)
        dist.all_reduce(dev, op=dist.ReduceOp.MAX)
        assert_close(dev.cpu(), cpu)
        assert_close(cpu, torch.maximum(data(0), data(1)))
    finally:
        dist.destroy_process_group()


def check_cpu_only_groups(rank, world):
    """What CPU-only programs see is what they see without openreg."""
    import torch.distributed._functional_collectives as funcol
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    for backend in ("gloo", "cpu:gloo"):
        init(backend)
        try:
            group = dist.group.WORLD
            assert group.name() == "gloo", (backend, group.name())
            assert dist.get_backend() == backend
            # The name c10d gave the group, which DeviceMesh and functional collectives
            # resolve it by (the openreg stand-in once left it empty).
            name = dist.distributed_c10d._get_process_group_name(group)
            assert group.group_name == name != "", (group.group_name, name)
            t = data(rank)
            dist.all_reduce(t)
            assert_close(t, data(0) + data(1))
            objects = [None] * world
            dist.all_gather_object(objects, rank)
            assert objects == list(range(world))
            # c10d asks the accelerator's backend for a barrier given device ids.
            dist.barrier(device_ids=[rank])
            assert_close(funcol.all_reduce(torch.ones(2), "sum", group), torch.full((2,), 2.0))
            mesh = init_device_mesh("cpu", (world,))
            full = distribute_tensor(torch.arange(4.0), mesh, [Shard(0)]).full_tensor()
            assert_close(full, torch.arange(4.0))
        finally:
            dist.destroy_process_group()


def check_detail_debug_keeps_cpu_collectives(rank, world):
    """TORCH_DISTRIBUTED_DEBUG=DETAIL wraps every backend; init_process_group() must still
    serve CPU tensors (through the openreg backend's transport) as well as openreg ones."""
    dist.set_debug_level(dist.DebugLevel.DETAIL)
    try:
        init()
        try:
            c = torch.ones(2)
            dist.all_reduce(c)
            assert_close(c, torch.full((2,), 2.0))
            t = torch.ones(2, device=device())
            dist.all_reduce(t)
            assert_close(t.cpu(), torch.full((2,), 2.0))
        finally:
            dist.destroy_process_group()
    finally:
        dist.set_debug_level(dist.DebugLevel.OFF)


def check_gloo_serves_openreg_tensors(rank, world):
    """init_process_group("gloo") serves openreg tensors too, as gloo serves CUDA tensors:
    FSDP2 without a mesh shards on the accelerator (openreg once installed), also in a
    program written for the CPU."""
    from torch.distributed.fsdp import fully_shard

    init("gloo")
    try:
        t = data(rank).to(device())
        dist.all_reduce(t)
        assert_close(t.cpu(), data(0) + data(1))
        c = data(rank)
        dist.all_reduce(c)
        assert_close(c, data(0) + data(1))
        model = mlp("cpu")
        fully_shard(model)
        assert next(model.parameters()).device.type == "openreg"
        model(data(10 + rank, (4, 8))).pow(2).mean().backward()
    finally:
        dist.destroy_process_group()


def check_new_group_leaving_out_a_rank_of_a_bound_group(rank, world):
    """c10d asks the left-out ranks of a new group to take part in a split of the bound
    default group (perform_nocolor_split, which NCCL needs)."""
    init(device_id=device())
    try:
        alone = dist.new_group([0])
        if rank == 0:
            t = data(0).to(device())
            dist.all_reduce(t, group=alone)
            assert_close(t.cpu(), data(0))
        subgroup, _ = dist.new_subgroups(group_size=1)
        t = data(rank).to(device())
        dist.all_reduce(t, group=subgroup)
        assert_close(t.cpu(), data(rank))
        dist.barrier()
    finally:
        dist.destroy_process_group()


def check_new_group(rank, world):
    init()
    try:
        pair = dist.new_group([0, 1])
        solo = [dist.new_group([r]) for r in range(world)]
        t = data(rank).to(device())
        dist.all_reduce(t, group=pair)
        assert_close(t.cpu(), data(0) + data(1))
        mine = torch.full((2,), float(rank), device=device())
        dist.all_reduce(mine, group=solo[rank])
        assert_close(mine.cpu(), torch.full((2,), float(rank)))
        c = torch.ones(1)
        dist.all_reduce(c, group=pair)
        assert c.item() == 2.0
        orccl = dist.new_group([0, 1], backend="orccl")
        t = torch.ones(2, device=device())
        dist.all_reduce(t, group=orccl)
        assert_close(t.cpu(), torch.full((2,), 2.0))
    finally:
        dist.destroy_process_group()


# ------------------------------------------------------------ stream semantics


def check_stream_order(rank, world):
    """A collective starts when its stream reaches it; wait() orders later work after it."""
    init()
    try:
        n = 1 << 22
        stale = torch.full((n,), -100.0).pin_memory()
        pinned = torch.full((n,), float(rank + 1)).pin_memory()
        side = torch.openreg.Stream()
        x = torch.empty(n, device=device())
        with torch.openreg.stream(side):
            # Asynchronous on `side`: the all_reduce must read x after the last copy.
            for source in (stale, stale, pinned):
                x.copy_(source, non_blocking=True)
            work = dist.all_reduce(x, async_op=True)
            work.wait()
            y = x * 2
        side.synchronize()
        total = float(sum(range(1, world + 1)))
        assert_close(x.cpu(), torch.full((n,), total))
        assert_close(y.cpu(), torch.full((n,), 2 * total))
    finally:
        dist.destroy_process_group()


def check_work_api(rank, world):
    init()
    try:
        x = data(rank).to(device())
        expected = data(0) + data(1)
        work = dist.all_reduce(x, async_op=True)
        # Compute on another stream overlaps with the transfer.
        other = torch.openreg.Stream()
        with torch.openreg.stream(other):
            z = torch.ones(64, 64, device=device()) @ torch.ones(64, 64, device=device())
        assert work.wait() is True
        assert work.is_completed() and work.is_success()
        assert_close(x.cpu(), expected)
        assert [t.device for t in work.result()] == [device()]
        other.synchronize()
        assert_close(z.cpu(), torch.full((64, 64), 64.0))

        x = data(rank).to(device())
        work = dist.all_reduce(x, async_op=True)
        future = work.get_future()
        plus_one = future.then(lambda f: f.value()[0] + 1)
        (value,) = future.wait()
        assert value.device == device() and value.data_ptr() == x.data_ptr()
        assert_close(value.cpu(), expected)
        result = plus_one.wait()
        assert result.device == device()
        assert_close(result.cpu(), expected + 1)
        work.synchronize()

        x = data(rank).to(device())
        work = dist.all_reduce(x, async_op=True)
        while not work.is_completed():
            pass
        work.synchronize()
        assert_close(x.cpu(), expected)

        # A non-contiguous result is staged on the host and copied back on completion.
        x = data(rank, (6, 4)).to(device()).t()
        future = dist.all_reduce(x, async_op=True).get_future()
        assert_close(future.wait()[0].cpu(), (data(0, (6, 4)) + data(1, (6, 4))).t())
        assert_close(x.cpu(), (data(0, (6, 4)) + data(1, (6, 4))).t())

        peer = 1 - rank
        t = torch.ones(3, device=device())
        send = dist.isend(t, peer) if rank == 0 else dist.irecv(t, peer)
        expect_error(send.get_future, "wait()")
        send.wait()
    finally:
        dist.destroy_process_group()


class _Stashed:
    """Stands for the contextvars context a backward pass stashes in TLS."""


def issued_with_stashed_object(issue):
    """Issues `issue()` while a Python object is stashed in this thread's TLS, as
    backward() does; returns what it returned and a weak reference to the object, which
    no one but what `issue` created still holds."""
    stashed = _Stashed()
    torch._C._stash_obj_in_tls("context", stashed)
    try:
        result = issue()
        assert torch._C._get_obj_in_tls("context") is stashed  # restored after the call
    finally:
        torch._C._remove_obj_from_tls("context")
    return result, weakref.ref(stashed)


def check_transport_keeps_no_python_objects(rank, world):
    """Collectives issued during backward (DDP's) leave no Python object from the thread's
    TLS in gloo's Works and callbacks: gloo may destroy those on its thread during
    interpreter exit, where dropping a Python object aborts the process. A plain gloo
    group on CPU tensors keeps the object (PyTorch's own behaviour, the control)."""
    init()
    try:
        x = data(rank).to(device())

        def on_openreg():
            work = dist.all_reduce(x, async_op=True)
            return work, work.get_future()

        (work, future), stashed = issued_with_stashed_object(on_openreg)
        assert stashed() is None, "an orccl Work or its callback holds the stashed object"
        work.wait()
        future.wait()
        assert_close(x.cpu(), data(0) + data(1))

        cpu_work, stashed = issued_with_stashed_object(
            lambda: dist.all_reduce(data(rank), async_op=True))  # the CPU (gloo) backend
        assert stashed() is not None, "gloo's Work no longer keeps the TLS objects"
        cpu_work.wait()
    finally:
        dist.destroy_process_group()


def gloo_threads():
    """This process's gloo run-loop threads (named by ProcessGroupGloo)."""
    names = []
    for task in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError), open(f"/proc/self/task/{task}/comm") as comm:
            names.append(comm.read().strip())
    return names.count("pt_gloo_runloop")


def check_last_reference_dropped_during_a_callback(rank, world):
    """The last reference to an orccl backend dropped by a thread holding the GIL (DDP's
    Reducer drops it so, after destroy_process_group) while a Python callback chained on a
    collective still runs on gloo's thread. Destroying the backend joins that thread, which
    needs the GIL to finish the callback: the backend releases the GIL for the join (this
    hung both the process and the check before it did)."""
    import threading

    init()
    x = torch.ones(4, device=device())
    if rank == 1:
        dist.distributed_c10d._get_default_store().wait(["callback attached"])
        dist.all_reduce(x)
        dist.destroy_process_group()
        return
    started, proceed = threading.Event(), threading.Event()

    def callback(future):
        assert threading.current_thread() is not threading.main_thread()
        started.set()
        assert proceed.wait(timeout=20)
        return future.value()

    backend = dist.group.WORLD._get_backend(device())
    # Rank 1 starts its part only once the callback is attached, so the callback runs
    # where gloo completes the collective: on gloo's thread.
    chained = dist.all_reduce(x, async_op=True).get_future().then(callback)
    dist.distributed_c10d._get_default_store().set("callback attached", "1")
    assert started.wait(timeout=20), "the callback did not start"
    threads_before = gloo_threads()  # gloo's threads name themselves once they run
    dist.destroy_process_group()
    gc.collect()  # the group's Python objects may sit in reference cycles
    proceed.set()
    del backend  # the last reference: destroys gloo's backend, joining its threads
    assert gloo_threads() < threads_before, (threads_before, gloo_threads())
    assert_close(chained.wait()[0].cpu(), torch.full((4,), 2.0))


# ------------------------------------------------------------------ collectives

FLOATS = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
INTS = (torch.int32, torch.int64, torch.uint8)


def ops_for(dtype):
    R = dist.ReduceOp
    ops = [R.SUM, R.PRODUCT, R.MIN, R.MAX]
    if dtype.is_floating_point:
        return ops + [R.AVG]
    return ops + [R.BAND, R.BOR, R.BXOR]


def check_all_reduce(rank, world):
    init()
    try:
        for dtype in FLOATS + INTS:
            for op in ops_for(dtype):
                cpu = data(rank, dtype=dtype)
                dev = cpu.to(device())
                dist.all_reduce(cpu, op=op)
                dist.all_reduce(dev, op=op)
                assert_close(dev.cpu(), cpu, msg=f"{dtype} {op}")
        assert_close(cpu, data(0, dtype=torch.uint8) ^ data(1, dtype=torch.uint8))
        # PREMUL_SUM (gloo has none): a float and a one-element openreg tensor factor.
        expected = 0.5 * (data(0) + data(1))
        for factor in (0.5, torch.tensor([0.5], device=device())):
            dev = data(rank).to(device())
            dist.all_reduce(dev, op=dist._make_nccl_premul_sum(factor))
            assert_close(dev.cpu(), expected)
        # Non-contiguous tensors: a slice and a transposed view.
        base = data(rank, (4, 8)).to(device())
        view = base[:, ::2]
        dist.all_reduce(view)
        assert_close(view.cpu(), (data(0, (4, 8)) + data(1, (4, 8)))[:, ::2])
        assert_close(base[:, 1::2].cpu(), data(rank, (4, 8))[:, 1::2])  # untouched
        t = data(rank, (5, 3)).to(device()).t()
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        assert_close(t.cpu(), torch.maximum(data(0, (5, 3)), data(1, (5, 3))).t())
        sparse_all_reduce(rank, world, gloo_reference=True)
    finally:
        dist.destroy_process_group()


def sparse_input(rank, dtype=torch.float32, empty=False):
    """A per-rank sparse COO tensor with a dense dimension, uncoalesced (row 3 twice),
    sharing rows with the other ranks' (or without entries)."""
    indices = torch.tensor([[rank, 3, 3, 4 - rank]])
    if empty:
        indices = indices[:, :0]
    values = data(rank, (indices.shape[1], 2), dtype=dtype)
    return torch.sparse_coo_tensor(indices, values, (6, 2))


def assert_same_sparse(actual, expected, msg=""):
    """An openreg sparse tensor holds what a CPU one does: members, nnz, coalesced flag."""
    assert actual.is_sparse and actual.device == device(), (actual.layout, actual.device, msg)
    assert actual.is_coalesced() == expected.is_coalesced(), msg
    assert actual._nnz() == expected._nnz(), (actual._nnz(), expected._nnz(), msg)
    assert_close(actual._indices().cpu(), expected._indices(), msg=msg)
    assert_close(actual._values().cpu(), expected._values(), msg=msg)


def sparse_all_reduce(rank, world, gloo_reference):
    """all_reduce of sparse COO openreg tensors, in the group made by the caller: as gloo on
    CPU tensors, the tensor itself becomes the coalesced sum (synchronously, with async_op
    and through its future). The reference is gloo's own CPU result if the group has gloo
    for CPU tensors (`gloo_reference`), else the sum computed locally. Only SUM is
    supported and no other collective takes sparse tensors (as on CUDA); both raise before
    anything is issued."""
    def reference(dtype=torch.float32, empty=False):  # empty: rank 1 has no entries
        if gloo_reference:
            expected = sparse_input(rank, dtype, empty and rank == 1)
            dist.all_reduce(expected)
            return expected
        parts = [sparse_input(r, dtype, empty and r == 1) for r in range(world)]
        return torch.stack(parts).sum(0).coalesce()

    for dtype in (torch.float32, torch.float64, torch.int64):
        for empty in (False, True):
            expected = reference(dtype, empty)
            t = sparse_input(rank, dtype, empty and rank == 1).to(device())
            assert dist.all_reduce(t) is None
            assert_same_sparse(t, expected, msg=f"{dtype} empty={empty}")
    expected = reference()
    t = sparse_input(rank).to(device())
    work = dist.all_reduce(t, async_op=True)
    assert work.wait()
    assert_same_sparse(t, expected)
    assert work.result()[0] is t  # as gloo's for a CPU tensor
    t = sparse_input(rank).to(device())
    future = dist.all_reduce(t, async_op=True).get_future()
    assert future.wait()[0] is t
    assert_same_sparse(t, expected)
    expect_error(lambda: dist.all_reduce(t, op=dist.ReduceOp.MAX), "ReduceOp.SUM")
    for collective in (lambda: dist.broadcast(t, src=0), lambda: dist.reduce(t, dst=0)):
        expect_error(collective, "on a sparse openreg tensor", "only all_reduce",
                     error=NotImplementedError)
    # Nothing was issued: the group is still in step.
    t = sparse_input(rank).to(device())
    dist.all_reduce(t)
    assert_same_sparse(t, expected)


class SparseNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = torch.nn.Embedding(20, 4, sparse=True)
        self.head = torch.nn.Linear(4, 1)

    def forward(self, ids):
        return self.head(self.embedding(ids).mean(1))


def ddp_with_sparse_embedding(rank, world, steps=3):
    """DDP of a model with a sparse Embedding (its gradient is all-reduced as a sparse
    tensor) trains like the model on one CPU over every rank's batch."""
    from torch.nn.functional import mse_loss
    from torch.nn.parallel import DistributedDataParallel as DDP

    def batch(step, r):
        generator = torch.Generator().manual_seed(10 * step + r)
        return (torch.randint(0, 20, (4, 3), generator=generator),
                torch.randn(4, 1, generator=generator))

    torch.manual_seed(0)
    reference = SparseNet()
    model = copy.deepcopy(reference).to(device())
    ddp = DDP(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    reference_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    for step in range(steps):
        ids, y = batch(step, rank)
        mse_loss(ddp(ids.to(device())), y.to(device())).backward()
        assert model.embedding.weight.grad.is_sparse
        optimizer.step()
        optimizer.zero_grad()
        # DDP averages the ranks' gradients: the gradient of the mean of their losses.
        losses = [mse_loss(reference(i), target) for i, target in
                  (batch(step, r) for r in range(world))]
        (sum(losses) / world).backward()
        reference_optimizer.step()
        reference_optimizer.zero_grad()
    for name, parameter in model.named_parameters():
        assert_close(parameter.detach().cpu(), dict(reference.named_parameters())[name].detach(),
                     msg=name)


def check_broadcast_and_reduce(rank, world):
    init()
    try:
        for src in range(world):
            for dtype in (torch.float32, torch.int64, torch.bfloat16):
                dev = data(rank, dtype=dtype).to(device())
                dist.broadcast(dev, src=src)
                assert_close(dev.cpu(), data(src, dtype=dtype))
            view = data(rank, (4, 8)).to(device())[:, 1::2]
            dist.broadcast(view, src=src)
            assert_close(view.cpu(), data(src, (4, 8))[:, 1::2])
        for dst in range(world):
            for op in (dist.ReduceOp.SUM, dist.ReduceOp.MIN):
                cpu = data(rank)
                dev = cpu.to(device())
                dist.reduce(cpu, dst=dst, op=op)
                dist.reduce(dev, dst=dst, op=op)
                if rank == dst:
                    assert_close(dev.cpu(), cpu)
            dev = data(rank, (6, 4)).to(device()).t()
            dist.reduce(dev, dst=dst, op=dist._make_nccl_premul_sum(2.0))
            if rank == dst:
                assert_close(dev.cpu(), 2 * (data(0, (6, 4)) + data(1, (6, 4))).t())
    finally:
        dist.destroy_process_group()


def check_all_gather(rank, world):
    init()
    try:
        for dtype in (torch.float32, torch.int32, torch.float16):
            inp = data(rank, dtype=dtype).to(device())
            outs = [torch.empty_like(inp) for _ in range(world)]
            dist.all_gather(outs, inp)
            for r in range(world):
                assert_close(outs[r].cpu(), data(r, dtype=dtype))
        # Non-contiguous input and outputs.
        inp = data(rank, (4, 8)).to(device())[:, ::2]
        outs = [torch.zeros(4, 4, device=device()).t() for _ in range(world)]
        dist.all_gather(outs, inp)
        for r in range(world):
            assert_close(outs[r].cpu(), data(r, (4, 8))[:, ::2])
        # Into one tensor: concatenated and stacked.
        inp = data(rank, (3, 5)).to(device())
        flat = torch.empty(world * 3, 5, device=device())
        dist.all_gather_into_tensor(flat, inp)
        assert_close(flat.cpu(), torch.cat([data(r, (3, 5)) for r in range(world)]))
        stacked = torch.empty(world, 3, 5, device=device())
        dist.all_gather_into_tensor(stacked, data(rank, (5, 3)).to(device()).t())
        assert_close(stacked.cpu(), torch.stack([data(r, (5, 3)).t() for r in range(world)]))
    finally:
        dist.destroy_process_group()


def check_gather_scatter(rank, world):
    init()
    try:
        for dst in range(world):
            inp = data(rank).to(device())
            outs = [torch.empty_like(inp) for _ in range(world)] if rank == dst else None
            dist.gather(inp, outs, dst=dst)
            if rank == dst:
                for r in range(world):
                    assert_close(outs[r].cpu(), data(r))
        for src in range(world):
            out = torch.empty(4, 6, device=device())
            ins = [data(10 + r).to(device()) for r in range(world)] if rank == src else None
            dist.scatter(out, ins, src=src)
            assert_close(out.cpu(), data(10 + rank))
    finally:
        dist.destroy_process_group()


def check_reduce_scatter(rank, world):
    init()
    try:
        for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.AVG):
            ins = [data(rank * world + r).to(device()) for r in range(world)]
            out = torch.empty(4, 6, device=device())
            dist.reduce_scatter(out, ins, op=op)
            cpu_ins = [data(rank * world + r) for r in range(world)]
            cpu_out = torch.empty(4, 6)
            dist.reduce_scatter(cpu_out, cpu_ins, op=op)
            assert_close(out.cpu(), cpu_out, msg=str(op))
        expected = sum(data(r * world + rank) for r in range(world))
        assert_close(cpu_out, expected / world)
        # One tensor in, one out (several dtypes, a stacked input, a PREMUL_SUM).
        for dtype in (torch.float32, torch.bfloat16, torch.int64):
            inp = data(rank, (world * 3, 4), dtype=dtype).to(device())
            out = torch.empty(3, 4, dtype=dtype, device=device())
            dist.reduce_scatter_tensor(out, inp)
            total = sum(data(r, (world * 3, 4), dtype=dtype) for r in range(world))
            assert_close(out.cpu(), total[rank * 3:(rank + 1) * 3].to(dtype))
        stacked = data(rank, (world * 3, 4)).to(device()).view(world, 3, 4)
        out = torch.empty(3, 4, device=device())
        dist.reduce_scatter_tensor(out, stacked)
        total = sum(data(r, (world * 3, 4)) for r in range(world))
        assert_close(out.cpu(), total[rank * 3:(rank + 1) * 3])
        inp = data(rank, (world * 3, 4)).to(device())
        dist.reduce_scatter_tensor(out, inp, op=dist._make_nccl_premul_sum(0.25))
        total = sum(data(r, (world * 3, 4)) for r in range(world)) * 0.25
        assert_close(out.cpu(), total[rank * 3:(rank + 1) * 3])
        assert_close(inp.cpu(), data(rank, (world * 3, 4)))  # the input is left alone
    finally:
        dist.destroy_process_group()


def check_all_to_all(rank, world):
    init()
    try:
        # Lists (gloo wants one size for all of them, with CPU tensors as well).
        ins = [torch.full((3, 2), float(10 * rank + r), device=device()) for r in range(world)]
        outs = [torch.empty(3, 2, device=device()) for _ in range(world)]
        dist.all_to_all(outs, ins)
        for r in range(world):
            assert_close(outs[r].cpu(), torch.full((3, 2), float(10 * r + rank)))
        # One tensor, even splits.
        inp = data(rank, (world * 2, 3)).to(device())
        out = torch.empty(world * 2, 3, device=device())
        dist.all_to_all_single(out, inp)
        expected = torch.cat(
            [data(r, (world * 2, 3))[rank * 2:(rank + 1) * 2] for r in range(world)]
        )
        assert_close(out.cpu(), expected)
        # Uneven splits: rank r sends splits[r][p] rows to peer p.
        splits = [[1, 3], [2, 2]]
        rows = [sum(s) for s in splits]
        inp = data(rank, (rows[rank], 3)).to(device())
        out_splits = [splits[p][rank] for p in range(world)]
        out = torch.empty(sum(out_splits), 3, device=device())
        dist.all_to_all_single(out, inp, out_splits, splits[rank])
        pieces = []
        for p in range(world):
            start = sum(splits[p][:rank])
            pieces.append(data(p, (rows[p], 3))[start:start + splits[p][rank]])
        assert_close(out.cpu(), torch.cat(pieces))
        # A non-contiguous input (gloo itself requires contiguous tensors here).
        inp = data(rank, (3, world * 2)).to(device()).t()
        out = torch.empty(world * 2, 3, device=device())
        dist.all_to_all_single(out, inp)
        expected = torch.cat(
            [data(r, (3, world * 2)).t()[rank * 2:(rank + 1) * 2] for r in range(world)]
        )
        assert_close(out.cpu(), expected)
    finally:
        dist.destroy_process_group()


def check_send_recv(rank, world):
    init()
    try:
        peer = 1 - rank
        for dtype in (torch.float32, torch.int64):
            if rank == 0:
                dist.send(data(0, dtype=dtype).to(device()), peer, tag=3)
                got = torch.empty(4, 6, dtype=dtype, device=device())
                dist.recv(got, peer, tag=4)
                assert_close(got.cpu(), data(1, dtype=dtype))
            else:
                got = torch.empty(4, 6, dtype=dtype, device=device())
                dist.recv(got, peer, tag=3)
                assert_close(got.cpu(), data(0, dtype=dtype))
                dist.send(data(1, dtype=dtype).to(device()), peer, tag=4)
        # Non-contiguous on both sides, isend/irecv.
        mine = data(rank, (6, 4)).to(device()).t()
        theirs = torch.zeros(6, 8, device=device())[:, ::2].t()
        works = [dist.isend(mine, peer), dist.irecv(theirs, peer)]
        for work in works:
            work.wait()
        assert_close(theirs.cpu(), data(peer, (6, 4)).t())
        # From any source.
        if rank == 1:
            got = torch.empty(2, device=device())
            assert dist.recv(got) == 0
            assert_close(got.cpu(), torch.tensor([7.0, 8.0]))
        else:
            dist.send(torch.tensor([7.0, 8.0], device=device()), 1)
        # Batched, both directions at once.
        send = data(rank, (5,)).to(device())
        recv = torch.empty(5, device=device())
        ops = [dist.P2POp(dist.isend, send, peer), dist.P2POp(dist.irecv, recv, peer)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        assert_close(recv.cpu(), data(peer, (5,)))
        dist.barrier()
    finally:
        dist.destroy_process_group()


def check_coalesced(rank, world):
    from torch.distributed.distributed_c10d import _coalescing_manager

    init()
    try:
        tensors = [data(rank, (i + 2,)).to(device()) for i in range(3)]
        with _coalescing_manager():
            for t in tensors:
                dist.all_reduce(t)
        for i, t in enumerate(tensors):
            assert_close(t.cpu(), data(0, (i + 2,)) + data(1, (i + 2,)))
        ins = [data(rank, (i + 1, 2)).to(device()) for i in range(3)]
        outs = [torch.empty(world * (i + 1), 2, device=device()) for i in range(3)]
        with _coalescing_manager(async_ops=True) as cm:
            for out, inp in zip(outs, ins):
                dist.all_gather_into_tensor(out, inp)
        cm.wait()
        for i, out in enumerate(outs):
            assert_close(out.cpu(), torch.cat([data(r, (i + 1, 2)) for r in range(world)]))
        ins = [data(rank, (world * (i + 1),)).to(device()) for i in range(2)]
        outs = [torch.empty(i + 1, device=device()) for i in range(2)]
        with _coalescing_manager():
            for out, inp in zip(outs, ins):
                dist.reduce_scatter_tensor(out, inp)
        for i, out in enumerate(outs):
            total = sum(data(r, (world * (i + 1),)) for r in range(world))
            assert_close(out.cpu(), total[rank * (i + 1):(rank + 1) * (i + 1)])
        # The device form: every collective inside is issued, one Work covers them all.
        a, b = data(rank, (3,)).to(device()), data(rank, (4,)).to(device())
        with _coalescing_manager(device=device(), async_ops=True) as cm:
            dist.broadcast(a, src=0)
            dist.broadcast(b, src=1)
        # Its future: every member's results, on the device.
        (coalesced,) = cm.works
        results = coalesced.get_future().wait()
        cm.wait()
        assert_close(a.cpu(), data(0, (3,)))
        assert_close(b.cpu(), data(1, (4,)))
        assert [r.device for r in results] == [device(), device()]
        assert_close([r.cpu() for r in results], [data(0, (3,)), data(1, (4,))])
    finally:
        dist.destroy_process_group()


def check_object_collectives(rank, world):
    """With only openreg's backend, objects travel as openreg tensors."""
    init(device_id=device())
    try:
        from torch.distributed.distributed_c10d import _get_object_coll_device

        assert _get_object_coll_device() == "openreg"
        objects = [{"from": rank}, [rank] * 3]
        gathered = [None] * world
        dist.all_gather_object(gathered, objects)
        assert gathered == [[{"from": r}, [r] * 3] for r in range(world)]
        box = [f"hello from {rank}", None] if rank == 1 else [None, None]
        dist.broadcast_object_list(box, src=1)
        assert box == ["hello from 1", None]
        got = [None] * world if rank == 0 else None
        dist.gather_object(("rank", rank), got, dst=0)
        if rank == 0:
            assert got == [("rank", r) for r in range(world)]
        out = [None]
        scattered = [{"to": r} for r in range(world)] if rank == 0 else None
        dist.scatter_object_list(out, scattered, src=0)
        assert out == [{"to": rank}]
        if rank == 0:
            dist.send_object_list([torch.arange(3), "x"], dst=1)
        else:
            received = [None, None]
            dist.recv_object_list(received, src=0)
            assert torch.equal(received[0], torch.arange(3)) and received[1] == "x"
    finally:
        dist.destroy_process_group()


# -------------------------------------------------------------------------- DDP


class Net(torch.nn.Module):
    def __init__(self, branch=False):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU()
        )
        self.head = torch.nn.Linear(64, 4)
        # A branch some iterations leave unused (find_unused_parameters).
        self.branch = torch.nn.Linear(64, 4) if branch else None

    def forward(self, x, use_branch=False):
        h = self.body(x)
        return self.head(h) + (self.branch(h) if use_branch else 0)


def train_ddp(dev, steps, hook=None, no_sync=False, alternate=False, **ddp_options):
    """A few SGD steps of Net under DDP; returns the parameters (on CPU) and DDP."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    model = Net(branch=alternate).to(dev)
    ddp = DDP(model, **ddp_options)
    if hook is not None:
        ddp.register_comm_hook(None, hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    for step in range(steps):
        generator = torch.Generator().manual_seed(100 * step + RANK)
        x = torch.randn(8, 16, generator=generator).to(dev)
        y = torch.randn(8, 4, generator=generator).to(dev)
        accumulate = no_sync and step % 2 == 0
        context = ddp.no_sync() if accumulate else contextlib.nullcontext()
        with context:
            loss = torch.nn.functional.mse_loss(ddp(x, use_branch=alternate and step % 2 == 1), y)
            loss.backward()
        if not accumulate:
            optimizer.step()
            optimizer.zero_grad()
    return [p.detach().cpu() for p in model.parameters()], ddp


DDP_VARIANTS = {
    "default": {},
    "small_buckets": {"bucket_cap_mb": 0.01},
    "bucket_views": {"bucket_cap_mb": 0.01, "gradient_as_bucket_view": True},
    "fp16_hook": {"hook": "fp16_compress_hook"},
    "bf16_hook": {"hook": "bf16_compress_hook"},
    "no_sync": {"no_sync": True},
    "find_unused": {"find_unused_parameters": True, "alternate": True},
    "static_graph": {"static_graph": True},
    "device_ids": {"device_ids": "rank"},
}


def check_ddp(rank, world, variant):
    """DDP on openreg (orccl) trains exactly like DDP on CPU (gloo)."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    init()
    try:
        options = dict(DDP_VARIANTS[variant])
        if options.get("hook") == "fp16_compress_hook":
            options["hook"] = default_hooks.fp16_compress_hook
        elif options.get("hook") == "bf16_compress_hook":
            # DDP refuses the hook by name unless NCCL or XCCL is present; the same hook
            # under another name is accepted, and works on gloo and orccl alike.
            def bf16_hook(state, bucket):
                return default_hooks.bf16_compress_hook(state, bucket)

            # DDP checks the annotation object (this module has postponed annotations).
            bf16_hook.__annotations__["return"] = torch.futures.Future[torch.Tensor]
            options["hook"] = bf16_hook
        device_ids = options.pop("device_ids", None)
        steps = 6
        cpu_params, _ = train_ddp(torch.device("cpu"), steps, **options)
        if device_ids == "rank":
            options["device_ids"] = [rank]
        dev_params, ddp = train_ddp(device(), steps, **options)
        for cpu, dev in zip(cpu_params, dev_params):
            assert_close(dev, cpu)
        # Parameters stay in sync across ranks.
        flat = torch.cat([p.flatten() for p in dev_params]).to(device())
        gathered = [torch.empty_like(flat) for _ in range(world)]
        dist.all_gather(gathered, flat)
        assert_close(gathered[0].cpu(), gathered[1].cpu())
        if variant == "default":
            # The Reducer's timer for openreg (TimerRegistry) measured the sampled iterations.
            stats = ddp._get_ddp_logging_data()
            assert stats.get("avg_backward_compute_time", 0) > 0, stats
            assert stats.get("avg_backward_comm_time", 0) > 0, stats
    finally:
        dist.destroy_process_group()


# ------------------------------------------------------- DTensor, TP, FSDP2, DCP


def check_sync_batch_norm(rank, world):
    """SyncBatchNorm over orccl (its CUDA-only pieces are openreg kernels) normalizes by the
    global batch: outputs, running statistics and gradients equal one CPU BatchNorm over the
    whole batch, with uneven batches per rank."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    init()
    try:
        torch.manual_seed(0)
        cpu_model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                                        torch.nn.ReLU()).double()
        model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(copy.deepcopy(cpu_model))
        ddp = DDP(model.to(device()))
        generator = torch.Generator().manual_seed(7)
        x = torch.randn(8, 3, 6, 6, dtype=torch.float64, generator=generator)
        weights = torch.randn(8, 4, 4, 4, dtype=torch.float64, generator=generator)
        mine = slice(0, 3) if rank == 0 else slice(3, 8)  # 3 and 5 samples

        out = ddp(x[mine].to(device()))
        (out * weights[mine].to(device())).sum().backward()
        expected = cpu_model(x)
        (expected * weights).sum().backward()

        assert_close(out.detach().cpu(), expected.detach()[mine])
        bn, cpu_bn = model[1], cpu_model[1]
        assert isinstance(bn, torch.nn.SyncBatchNorm)
        assert_close(bn.running_mean.cpu(), cpu_bn.running_mean)
        assert_close(bn.running_var.cpu(), cpu_bn.running_var)
        # DDP averages the ranks' gradients; the CPU model saw the whole batch at once.
        for param, cpu_param in zip(model.parameters(), cpu_model.parameters()):
            assert_close(param.grad.cpu() * world, cpu_param.grad)
    finally:
        dist.destroy_process_group()


def mlp(dev):
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)
    ).to(dev)


def check_dtensor_tp(rank, world):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    from torch.distributed.tensor.parallel import (
        ColwiseParallel, RowwiseParallel, parallelize_module,
    )

    init(device_id=device())
    try:
        mesh = init_device_mesh("openreg", (world,))
        a, b = data(0, (8, 6)), data(1, (6, 4))
        da = distribute_tensor(a.to(device()), mesh, [Shard(0)])
        db = distribute_tensor(b.to(device()), mesh, [Replicate()])
        assert da.to_local().shape == (8 // world, 6)
        product = (da @ db).redistribute(mesh, [Replicate()]).to_local()
        assert product.device == device()
        assert_close(product.cpu(), a @ b)
        assert_close(da.full_tensor().cpu(), a)
        # Tensor parallel: column- then row-wise linear layers, forward and backward.
        model, reference = mlp(device()), mlp("cpu")
        parallelize_module(model, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
        x = data(7, (5, 8))
        model(x.to(device())).pow(2).sum().backward()
        reference(x).pow(2).sum().backward()
        for (name, p), ref in zip(model.named_parameters(), reference.parameters()):
            assert_close(p.grad.full_tensor().cpu(), ref.grad, msg=name)
    finally:
        dist.destroy_process_group()


def check_split_group(rank, world):
    """dist.split_group of a group bound to a device (DeviceMesh splits such a group for
    every mesh dimension): collectives in the splits, two splits of one parent, and a 2-D
    mesh built by splitting; with gloo beside orccl, CPU tensors in the splits too (c10d
    splits that gloo with the same store)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    for backend in (None, "cpu:gloo,openreg:orccl"):
        init(backend, device_id=device())
        try:
            pairs = dist.split_group(split_ranks=[list(range(world))])
            singles = dist.split_group(split_ranks=[[r] for r in range(world)])
            assert pairs.size() == world and singles.size() == 1
            assert pairs._get_backend(torch.device("openreg")).name() == "orccl"
            tensors = [lambda r: data(r).to(device())]
            if backend is not None:
                tensors.append(data)
            for group, members in ((pairs, range(world)), (singles, [rank])):
                for make in tensors:
                    t = make(rank)
                    dist.all_reduce(t, group=group)
                    assert_close(t.cpu(), sum(data(r) for r in members))
            mesh = init_device_mesh("openreg", (1, world), mesh_dim_names=("dp", "tp"))
            a = data(0, (8, 6))
            da = distribute_tensor(a.to(device()), mesh["tp"], [Shard(0)])
            assert da.to_local().shape == (8 // world, 6)
            assert_close(da.full_tensor().cpu(), a)
        finally:
            dist.destroy_process_group()


def train_2d(mesh_device, steps=2):
    """Tensor parallel within "tp" pairs, FSDP2 across "dp": the 2-D layout of large
    models, on a (2, 2) mesh of four processes."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel, RowwiseParallel, parallelize_module,
    )

    mesh = init_device_mesh(mesh_device, (2, WORLD // 2), mesh_dim_names=("dp", "tp"))
    model = mlp(mesh_device)
    parallelize_module(model, mesh["tp"], {"0": ColwiseParallel(), "2": RowwiseParallel()})
    fully_shard(model, mesh=mesh["dp"])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(steps):
        # Ranks of one "tp" pair see the same batch; the two pairs see different ones.
        x = data(10 * step + mesh.get_local_rank("dp"), (4, 8)).to(mesh_device)
        model(x).pow(2).mean().backward()
        optimizer.step()
        optimizer.zero_grad()
    return mesh, model


def check_mesh_2d(rank, world):
    """DTensor placements on a 2-D openreg mesh, and 2-D (FSDP2 x TP) training that
    matches the same training on a CPU mesh (gloo) in the same processes."""
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    init()
    try:
        mesh, dev = train_2d("openreg")
        a = data(0, (8, 6))
        da = distribute_tensor(a.to(device()), mesh, [Shard(0), Shard(1)])
        assert da.to_local().shape == (4, 3) and da.to_local().device == device()
        assert_close(da.redistribute(mesh, [Replicate(), Shard(0)]).to_local().cpu(),
                     a.chunk(2)[mesh.get_local_rank("tp")])
        assert_close(da.full_tensor().cpu(), a)
        _, cpu = train_2d("cpu")
        for (name, p), q in zip(dev.named_parameters(), cpu.parameters()):
            assert p.to_local().device == device()
            assert_close(p.full_tensor().cpu(), q.full_tensor(), msg=name)
    finally:
        dist.destroy_process_group()


def train_fsdp(mesh_device, mixed_precision, reshard, steps=3):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mesh = init_device_mesh(mesh_device, (WORLD,))
    model = mlp(mesh_device)
    options = {"mesh": mesh, "reshard_after_forward": reshard}
    if mixed_precision:
        options["mp_policy"] = MixedPrecisionPolicy(
            param_dtype=torch.bfloat16, reduce_dtype=torch.float32
        )
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, **options)
    fully_shard(model, **options)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(steps):
        x = data(10 * step + RANK, (4, 8)).to(mesh_device)
        model(x).float().pow(2).mean().backward()
        optimizer.step()
        optimizer.zero_grad()
    return model


def check_fsdp2(rank, world, mixed_precision, reshard):
    """fully_shard on openreg trains exactly like fully_shard on CPU (gloo)."""
    init()
    try:
        cpu = train_fsdp("cpu", mixed_precision, reshard)
        dev = train_fsdp("openreg", mixed_precision, reshard)
        for (name, p), q in zip(dev.named_parameters(), cpu.parameters()):
            assert p.to_local().device == device()
            assert_close(p.full_tensor().cpu(), q.full_tensor(), msg=name)
    finally:
        dist.destroy_process_group()


def check_checkpoint(rank, world, path):
    """torch.distributed.checkpoint: a sharded openreg model saved, then loaded into fresh
    sharded models on openreg and on the CPU."""
    import torch.distributed.checkpoint as dcp

    init()
    try:
        trained = train_fsdp("openreg", False, True)
        expected = {k: v.full_tensor().cpu() for k, v in trained.state_dict().items()}
        dcp.save({"model": trained.state_dict()}, checkpoint_id=path)
        for mesh_device in ("openreg", "cpu"):
            fresh = train_fsdp(mesh_device, False, True, steps=0)
            state = {"model": fresh.state_dict()}
            dcp.load(state, checkpoint_id=path)
            fresh.load_state_dict(state["model"])
            for name, value in fresh.state_dict().items():
                assert value.to_local().device.type == mesh_device
                assert_close(value.full_tensor().cpu(), expected[name], msg=name)
    finally:
        dist.destroy_process_group()


# -------------------------------------------------------------------- bad input


def check_wrong_device(rank, world):
    init()
    try:
        t = torch.ones(2, device=device())
        dist.all_reduce(t)  # the group now works on this process's device
        other = torch.ones(2, device=device(1 - rank))
        expect_error(lambda: dist.all_reduce(other), f"is on openreg:{1 - rank}",
                     f"works on openreg:{rank}", "one openreg device per process",
                     error=ValueError)
        orccl = dist.group.WORLD._get_backend(device())
        expect_error(lambda: orccl.allreduce([torch.ones(2)]), "expected openreg tensors",
                     "is on cpu", "init_process_group()", error=ValueError)
        out = torch.empty(2 * world, device=device())
        expect_error(lambda: dist.all_gather_into_tensor(out, torch.ones(2)),
                     "expected openreg tensors", error=ValueError)
        # Nothing was issued: the group is still in step.
        dist.all_reduce(t)
        assert_close(t.cpu(), torch.full((2,), float(world * world)))
    finally:
        dist.destroy_process_group()
    init(device_id=device())
    try:
        expect_error(lambda: dist.all_reduce(torch.ones(2, device=device(1 - rank))),
                     "init_process_group(device_id=...)", error=ValueError)
    finally:
        dist.destroy_process_group()


MISMATCHES = {
    "shape": lambda rank: torch.ones(4 + 4 * rank, device=device()),
    "dtype": lambda rank: torch.ones(4, dtype=(torch.float32, torch.int32)[rank], device=device()),
}


def check_mismatch_detected(rank, world):
    """With TORCH_DISTRIBUTED_DEBUG=DETAIL (c10d's collective checker wraps every backend,
    orccl included) shapes or dtypes that differ between ranks raise on every rank."""
    dist.set_debug_level(dist.DebugLevel.DETAIL)
    try:
        for kind, make in MISMATCHES.items():
            init(timeout=datetime.timedelta(seconds=5))
            try:
                start = time.monotonic()
                t = make(rank)
                expect_error(lambda: dist.all_reduce(t), "Detected mismatch between collectives")
                assert time.monotonic() - start < 10, kind
            finally:
                dist.destroy_process_group()
    finally:
        dist.set_debug_level(dist.DebugLevel.OFF)


def check_mismatch_unchecked(rank, world):
    """Without the checker, gloo itself notices a size mismatch: the rank receiving more
    bytes than it expects ends (gloo aborts the process, as with CPU tensors) and the
    other gets an error. The test process sees both within the group's timeout."""
    init(timeout=datetime.timedelta(seconds=3))
    try:
        t = MISMATCHES["shape"](rank)
        expect_error(lambda: dist.all_reduce(t))
    finally:
        dist.destroy_process_group()


def check_peer_exits(rank, world):
    """A rank that dies mid-training: the others get an error within the group's timeout."""
    init(timeout=datetime.timedelta(seconds=5))
    t = torch.ones(1 << 16, device=device())
    for _ in range(3):
        dist.all_reduce(t)
    if rank == 1:
        os._exit(3)
    start = time.monotonic()
    try:
        expect_error(lambda: [dist.all_reduce(t) for _ in range(10)])
        assert time.monotonic() - start < 30, time.monotonic() - start
    finally:
        dist.destroy_process_group()


def check_forked_child(rank, world):
    """A child forked from a rank that uses openreg gets a clear error from a collective
    on openreg tensors (its device memory was not inherited), never a hang; the parent's
    group goes on working."""
    import select

    init()
    try:
        t = torch.ones(4, device=device())
        dist.all_reduce(t)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report the outcome through the pipe, exit at once
            try:
                dist.all_reduce(t)
                message = "no error"
            except BaseException as exc:
                message = f"{type(exc).__name__}: {exc}"
            os.write(write, message.encode()[:4000])
            os._exit(0)
        os.close(write)
        ready, _, _ = select.select([read], [], [], 30)
        if not ready:
            os.kill(pid, signal.SIGKILL)
        message = os.read(read, 4000).decode() if ready else "timed out"
        os.close(read)
        os.waitpid(pid, 0)
        assert "was forked from it" in message and "spawn" in message, message
        dist.all_reduce(t)
        assert_close(t.cpu(), torch.full((4,), float(world) ** 2))
    finally:
        dist.destroy_process_group()


def check_after_destroy(rank, world):
    init()
    pair = dist.new_group([0, 1])
    t = torch.ones(2, device=device())
    dist.all_reduce(t, group=pair)
    dist.destroy_process_group()
    expect_error(lambda: dist.all_reduce(t), "not been initialized", error=ValueError)
    expect_error(lambda: dist.all_reduce(t, group=pair), "destroy_process_group")
    expect_error(lambda: dist.barrier(), "not been initialized", error=ValueError)


# ------------------------------------------------------------------------- loop


def main():
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    # The test asks for every thread's Python stack when a check runs out of time.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    torch.openreg.set_device(RANK)
    for line in sys.stdin:
        request = json.loads(line)
        if request["check"] == "exit":
            break
        global PORTS
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        PORTS = iter(request["ports"])
        reply = {"ok": True, "error": ""}
        try:
            globals()[f"check_{request['check']}"](RANK, WORLD, **request.get("args", {}))
        except BaseException:
            reply = {"ok": False, "error": traceback.format_exc()}
            if dist.is_initialized():
                try:
                    dist.destroy_process_group()
                except Exception:
                    pass
        protocol.write(json.dumps(reply) + "\n")


if __name__ == "__main__":
    main()
