"""Micro-benchmarks of the runtime: orLaunchKernel overhead on an idle stream
and copy bandwidth against a plain host memcpy of the same size.

    python bench/bench_runtime.py [--size-mib 64] [--repeat 20]
"""

import argparse
import ctypes
import time

import openreg_runtime as rt
from openreg_runtime import MemcpyKind as K
from openreg_runtime import _C


def best_seconds(fn, repeat):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mib", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()

    stream = rt.Stream()
    for name, handle in (("default stream", 0), ("created stream", stream.handle)):
        ns = min(_C._bench_launch_kernel(handle, 200_000) for _ in range(5))
        print(f"orLaunchKernel, idle {name}: {ns:6.1f} ns/launch")

    n = args.size_mib << 20
    host_a = rt.malloc_host(n)
    host_b = rt.malloc_host(n)
    pageable = ctypes.create_string_buffer(n)
    dev_a, dev_b = rt.malloc(n), rt.malloc(n)
    # Touch everything first: compare copies, not first-touch page faults.
    for p in (host_a, host_b):
        ctypes.memset(p, 1, n)
    rt.memset(dev_a, 1, n)
    rt.memset(dev_b, 1, n)

    baseline = best_seconds(lambda: ctypes.memmove(host_b, host_a, n), args.repeat)
    rows = [
        ("host memcpy (baseline)", baseline),
        ("H2D pinned", best_seconds(lambda: rt.memcpy(dev_a, host_a, n, K.HOST_TO_DEVICE), args.repeat)),
        ("H2D pageable", best_seconds(lambda: rt.memcpy(dev_a, ctypes.addressof(pageable), n, K.HOST_TO_DEVICE), args.repeat)),
        ("D2H pinned", best_seconds(lambda: rt.memcpy(host_b, dev_a, n, K.DEVICE_TO_HOST), args.repeat)),
        ("D2D", best_seconds(lambda: rt.memcpy(dev_b, dev_a, n, K.DEVICE_TO_DEVICE), args.repeat)),
        ("D2H async pinned + sync", best_seconds(
            lambda: (rt.memcpy_async(host_b, dev_a, n, K.DEVICE_TO_HOST, stream), stream.synchronize()), args.repeat)),
    ]
    print(f"\ncopies of {args.size_mib} MiB (best of {args.repeat}):")
    for name, seconds in rows:
        print(f"  {name:26s} {n / seconds / 1e9:6.2f} GB/s  ({baseline / seconds:4.2f}x baseline)")

    for p in (dev_a, dev_b):
        rt.free(p)
    for p in (host_a, host_b):
        rt.free_host(p)


if __name__ == "__main__":
    main()
