#!/usr/bin/env python
"""all_reduce across two processes: openreg tensors (orccl) vs CPU tensors (gloo).

    python benchmarks/distributed.py [--reps N] [--port PORT]

Both ranks join one group made by ``init_process_group()``, whose CPU backend is the very
gloo that orccl uses as its transport, so the two sides differ only by what orccl adds
(stream-ordered issue, kernel-view aliases, its Work). For each size the sides alternate
in blocks; each block times a run of back-to-back synchronous all_reduces on rank 0 after
a barrier. The table shows per-operation medians over the blocks and the ratio
openreg / CPU (the issue's targets: 64 MiB <= 1.05, 4 KiB <= 1.10). Loopback only.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import time

SIZES = [("4 KiB", 4 << 10, 200, 1.10), ("64 MiB", 64 << 20, 3, 1.05)]
# As benchmarks/run.py: glibc keeps freed memory, so neither side pays fresh page faults.
MALLOC_ENV = {
    "MALLOC_MMAP_MAX_": "0",
    "MALLOC_TRIM_THRESHOLD_": str(64 << 30),
    "MALLOC_TOP_PAD_": str(256 << 20),
}


def worker(rank: int, world: int, port: int, reps: int, queue) -> None:
    import torch
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
    torch.openreg.set_device(rank)
    dist.init_process_group(rank=rank, world_size=world)
    rows = []
    for label, nbytes, ops_per_block, target in SIZES:
        numel = nbytes // 4
        tensors = {
            "cpu": torch.ones(numel),
            "openreg": torch.ones(numel, device=torch.device("openreg", rank)),
        }
        times = {side: [] for side in tensors}
        for block in range(reps + 1):  # the first block warms up
            for side, tensor in tensors.items():
                dist.barrier()
                start = time.perf_counter()
                for _ in range(ops_per_block):
                    dist.all_reduce(tensor)
                elapsed = (time.perf_counter() - start) / ops_per_block
                if block:
                    times[side].append(elapsed)
        medians = {side: statistics.median(values) for side, values in times.items()}
        rows.append((label, medians["cpu"], medians["openreg"], target))
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
    print(f"{'all_reduce':>10} | {'cpu (gloo)':>12} | {'openreg (orccl)':>15} | ratio | target")
    for label, cpu, dev, target in rows:
        ratio = dev / cpu
        verdict = "met" if ratio <= target else "missed"
        print(f"{label:>10} | {fmt(cpu):>12} | {fmt(dev):>15} | {ratio:5.2f} | "
              f"<= {target:.2f} {verdict}")


if __name__ == "__main__":
    main()
