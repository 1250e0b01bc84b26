"""One rank of the two worker processes test_distributed.py shares across its tests.

Run as ``python distributed_worker.py RANK WORLD_SIZE``. It reads one JSON request per
line on stdin ({"check": name, "port": free port, "args": {...}}), runs
``check_<name>(rank, world_size, **args)`` with MASTER_ADDR/MASTER_PORT set for that
check, and answers one JSON line ({"ok": ..., "error": traceback}) on its original
stdout. Everything else the process prints goes to stderr. Every check makes and
destroys its own process groups, so one failing check leaves the next one a clean slate.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import traceback

import torch
import torch.distributed as dist
from torch.testing import assert_close

RANK = int(sys.argv[1]) if __name__ == "__main__" else 0
WORLD = int(sys.argv[2]) if __name__ == "__main__" else 1
SHORT = datetime.timedelta(seconds=20)


def device(rank=None):
    return torch.device("openreg", RANK if rank is None else rank)


def init(backend=None, **kwargs):
    kwargs.setdefault("timeout", SHORT)
    dist.init_process_group(backend, rank=RANK, world_size=WORLD, **kwargs)


def data(rank, shape=(4, 6), dtype=torch.float32):
    """Deterministic per-rank input, computed the same way by every rank."""
    generator = torch.Generator().manual_seed(1234 + rank)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=generator).to(dtype)
    return torch.randint(-50, 50, shape, generator=generator, dtype=dtype)


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
        assert pg.name() == "gloo"
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
        assert dist.group.WORLD.name() == "gloo"
        cpu, dev = data(rank), data(rank).to(device())
        dist.all_reduce(cpu, op=dist.ReduceOp.MAX)
        dist.all_reduce(dev, op=dist.ReduceOp.MAX)
        assert_close(dev.cpu(), cpu)
        assert_close(cpu, torch.maximum(data(0), data(1)))
    finally:
        dist.destroy_process_group()


def check_cpu_only_groups(rank, world):
    """What CPU-only programs see is what they see without openreg."""
    for backend in ("gloo", "cpu:gloo"):
        init(backend)
        try:
            assert dist.group.WORLD.name() == "gloo", (backend, dist.group.WORLD.name())
            assert dist.get_backend() == backend
            t = data(rank)
            dist.all_reduce(t)
            assert_close(t, data(0) + data(1))
            objects = [None] * world
            dist.all_gather_object(objects, rank)
            assert objects == list(range(world))
        finally:
            dist.destroy_process_group()


def check_gloo_names_fix(rank, world):
    """init_process_group("gloo") serves CPU tensors only; the error says what to use."""
    init("gloo")
    try:
        t = torch.ones(2, device=device())
        expect_error(lambda: dist.all_reduce(t), "orccl", "init_process_group()")
        # The group still works for CPU tensors afterwards.
        c = torch.ones(2)
        dist.all_reduce(c)
        assert_close(c, torch.full((2,), 2.0))
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


# ------------------------------------------------------------------------- loop


def main():
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    torch.openreg.set_device(RANK)
    for line in sys.stdin:
        request = json.loads(line)
        if request["check"] == "exit":
            break
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(request["port"])
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
