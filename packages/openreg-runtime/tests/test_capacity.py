"""Capacity accounting, OOM and recovery, coalescing, best fit, and pages
going back to the OS. Each test runs in its own interpreter with a small
OPENREG_DEVICE_MEMORY (read once per process) or a fresh arena."""

import json

from runtime_helpers import run_ok

SMALL = {"OPENREG_DEVICE_MEMORY": "1MiB"}


def test_exact_capacity_oom_and_recovery():
    out = run_ok(
        """
        import openreg_runtime as r
        KiB = 1024
        full = r.malloc(1024 * KiB)  # the whole device, exactly
        assert r.mem_get_info() == (0, 1024 * KiB)
        try:
            r.malloc(1)
        except r.OpenRegError as e:
            print(e.name)
            print(e)
        r.free(full)
        assert r.mem_get_info() == (1024 * KiB, 1024 * KiB)
        again = r.malloc(1024 * KiB)  # recovered
        r.set_device(1)
        other = r.malloc(1024 * KiB)  # devices are independent
        print("ok")
        """,
        SMALL,
    )
    name, message, ok = out.splitlines()
    assert name == "orErrorMemoryAllocation"
    assert message == (
        "orErrorMemoryAllocation: out of memory on device 0: tried to allocate 1 bytes; "
        "0 bytes free of 1048576 total (largest free block 0 bytes)"
    )
    assert ok == "ok"


def test_rounding_counts_against_capacity():
    out = run_ok(
        """
        import openreg_runtime as r
        ptrs = [r.malloc(1) for _ in range(2048)]  # 2048 granules of 512 bytes
        print(r.mem_get_info()[0])
        try:
            r.malloc(1)
        except r.OpenRegError as e:
            print(e.name)
        """,
        SMALL,
    )
    assert out.split() == ["0", "orErrorMemoryAllocation"]


def test_fragmentation_then_coalescing():
    out = run_ok(
        """
        import openreg_runtime as r
        Q = 256 * 1024
        a, b, c, d = (r.malloc(Q) for _ in range(4))
        r.free(a)
        r.free(c)
        print(r.mem_get_info()[0])
        try:
            r.malloc(2 * Q)  # enough bytes free, but not contiguous
        except r.OpenRegError as e:
            print(e)
        r.free(b)  # a, b and c merge into one block
        big = r.malloc(3 * Q)
        print(big == a)
        """,
        SMALL,
    )
    free_bytes, message, merged = out.splitlines()
    assert free_bytes == str(512 * 1024)
    assert "524288 bytes free of 1048576 total (largest free block 262144 bytes)" in message
    assert merged == "True"


def test_best_fit_picks_the_smallest_hole():
    out = run_ok(
        """
        import openreg_runtime as r
        KiB = 1024
        big_hole = r.malloc(64 * KiB)
        r.malloc(KiB)  # separators keep holes from merging
        small_hole = r.malloc(16 * KiB)
        r.malloc(KiB)
        r.free(big_hole)
        r.free(small_hole)
        print(r.malloc(10 * KiB) == small_hole, r.malloc(40 * KiB) == big_hole)
        """,
        SMALL,
    )
    assert out.split() == ["True", "True"]


def test_freed_pages_return_to_the_os():
    out = run_ok(
        """
        import json
        import openreg_runtime as r

        def rss_shmem_kib():
            for line in open("/proc/self/status"):
                if line.startswith("RssShmem:"):
                    return int(line.split()[1])

        MiB = 1 << 20
        p = r.malloc(64 * MiB)
        base = rss_shmem_kib()
        r.memset(p, 0xAB, 64 * MiB)  # touch every page through the kernel view
        touched = rss_shmem_kib()
        r.free(p)  # a >= 1 MiB free region: punched
        released = rss_shmem_kib()
        q = r.malloc(64 * MiB)  # same place; punched pages read back as zeros
        zeros = r.copy_from_device(q + 32 * MiB, 16) == bytes(16)

        small = r.malloc(256 * 1024)
        r.malloc(512)  # separator: the freed small block stays < 1 MiB
        r.memset(small, 1, 256 * 1024)
        before_small_free = rss_shmem_kib()
        r.free(small)
        after_small_free = rss_shmem_kib()
        print(json.dumps([base, touched, released, q == p, zeros, before_small_free, after_small_free]))
        """
    )
    base, touched, released, same, zeros, before_small, after_small = json.loads(out)
    assert touched - base >= 63 * 1024  # KiB
    assert touched - released >= 63 * 1024
    assert same and zeros
    # Small free regions keep their pages (hole punching has a 1 MiB floor).
    assert before_small - after_small < 64


def test_unaligned_capacity_is_fully_usable():
    out = run_ok(
        """
        import openreg_runtime as r
        a = r.malloc(512)
        b = r.malloc(488)  # the odd tail: 1000 - 512
        print(b - a, r.mem_get_info())
        try:
            r.malloc(1)
        except r.OpenRegError as e:
            print(e.name)
        """,
        {"OPENREG_DEVICE_MEMORY": "1000"},
    )
    assert out.splitlines() == ["512 (0, 1000)", "orErrorMemoryAllocation"]
