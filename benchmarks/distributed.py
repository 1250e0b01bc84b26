#!/usr/bin/env python
"""Two processes: openreg tensors (orccl) vs CPU tensors (gloo).

    python benchmarks/distributed.py [--reps N] [--port PORT]

Both ranks join one group made by ``init_process_group()``, whose CPU backend is the very
gloo that orccl uses as its transport, so the two sides differ only by what orccl adds
(stream-ordered issue, kernel-view aliases, its Work) and, for the DDP row, by openreg's
kernels. Rows: all_reduce of 4 KiB and 64 MiB, and one DDP training step of the MLP of
benchmarks/workloads.py (512-1024-1024-10, batch 256 per rank, Adam). The sides alternate
in blocks; each block times a run of back-to-back operations on rank 0 after a barrier.
The table shows per-operation medians over the blocks and the ratio openreg / CPU
(targets: 4 KiB <= 1.10, 64 MiB <= 1.05, DDP step <= 1.05). Loopback only.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import time

SIZES = [("4 KiB", 4 << 10, 200, 1.10), ("64 MiB", 64 << 20, 3, 1.05)]
DDP_STEPS_PER_BLOCK, DDP_TARGET = 5, 1.05
# As benchmarks/run.py: glibc keeps freed memory, so neither side pays fresh page faults.
MALLOC_ENV = {
    "MALLOC_MMAP_MAX_": "0",
    "MALLOC_TRIM_THRESHOLD_": str(64 << 30),
    "MALLOC_TOP_PAD_": str(256 << 20),
}


def ddp_step(device, rank: int):
    """One DDP training step of the benchmark MLP on `device`, as a callable."""
    import torch
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)
    ).to(device)
    ddp = DistributedDataParallel(model)
    generator = torch.Generator().manual_seed(rank)
    x = torch.randn(256, 512, generator=generator).to(device)
    y = torch.randint(0, 10, (256,), generator=generator).to(device)
    optimizer = torch.optim.Adam(ddp.parameters(), lr=1e-3, foreach=False)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss_fn(ddp(x), y).backward()
        optimizer.step()

    return step


def median_times(operations: dict, per_block: int, reps: int) -> dict:
    """Per-operation median over `reps` timed blocks per side, sides alternating."""
    import torch.distributed as dist

    times = {side: [] for side in operations}
    for block in range(reps + 1):  # the first block warms up
        for side, operation in operations.items():
            dist.barrier()
            start = time.perf_counter()
            for _ in range(per_block):
                operation()
            if block:
                times[side].append((time.perf_counter() - start) / per_block)
    return {side: statistics.median(values) for side, values in times.items()}


def worker(rank: int, world: int, port: int, reps: int, queue) -> None:
    import torch
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
    device = torch.device("openreg", rank)
    torch.openreg.set_device(device)
    dist.init_process_group(rank=rank, world_size=world)
    rows = []
    for label, nbytes, per_block, target in SIZES:
        cpu, dev = torch.ones(nbytes // 4), torch.ones(nbytes // 4, device=device)
        medians = median_times({"cpu": lambda: dist.all_reduce(cpu),
                                "openreg": lambda: dist.all_reduce(dev)}, per_block, reps)
        rows.append((f"all_reduce {label}", medians["cpu"], medians["openreg"], target))
    medians = median_times({"cpu": ddp_step("cpu", rank), "openreg": ddp_step(device, rank)},
                           DDP_STEPS_PER_BLOCK, reps)
    rows.append(("DDP MLP step", medians["cpu"], medians["openreg"], DDP_TARGET))
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        queue.put(rows)


def fmt(seconds: float) -> str:
    return f"{seconds * 1e6:9.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:9.3f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15, help="timed blocks per side and size")
    parser.add_argument("--port", type=int, default=0, help="rendezvous port (default: free)")
    args = parser.parse_args()
    missing = {k: v for k, v in MALLOC_ENV.items() if k not in os.environ}
    if missing:
        os.environ.update(missing)
        os.execv(sys.executable, [sys.executable, os.path.abspath(__file__), *sys.argv[1:]])
    port = args.port
    if not port:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]

    import torch.multiprocessing as mp

    context = mp.get_context("spawn")
    queue = context.SimpleQueue()
    mp.start_processes(worker, args=(2, port, args.reps, queue), nprocs=2, start_method="spawn")
    rows = queue.get()
    print(f"{'':>17} | {'cpu (gloo)':>12} | {'openreg (orccl)':>15} | ratio | target")
    for label, cpu, dev, target in rows:
        ratio = dev / cpu
        verdict = "met" if ratio <= target else "missed"
        print(f"{label:>17} | {fmt(cpu):>12} | {fmt(dev):>15} | {ratio:5.2f} | "
              f"<= {target:.2f} {verdict}")


if __name__ == "__main__":
    main()
