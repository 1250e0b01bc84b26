"""Bounded multi-thread soak (soak.py, run in a subprocess) and reduced cases of what it found.

OPENREG_SOAK_SECONDS (default 3) sets how long the soak runs; the rest of soak.py's
settings pass through the environment too (OPENREG_SOAK_THREADS, OPENREG_SOAK_SEED, ...).
"""

import json
import os
import sys
import textwrap
import threading
import uuid
from pathlib import Path

import pytest
import torch

from openreg_torch.testing import ChildTimeout, run_process

SOAK = Path(__file__).with_name("soak.py")
SECONDS = float(os.environ.get("OPENREG_SOAK_SECONDS", "3"))


def run_script(args: list[str], env: dict[str, str], timeout: float):
    """Run a script in a fresh interpreter: a crash, a hang or a failed check is a test
    failure that shows the script's output."""
    try:
        result = run_process([sys.executable, *args], env, timeout)
    except ChildTimeout as error:
        pytest.fail(f"its own watchdog did not end it: {error}")
    assert result.returncode == 0, (
        f"exit status {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result


def soak(**settings: str) -> dict:
    env = {"OPENREG_SOAK_SECONDS": str(SECONDS), **settings}
    result = run_script([str(SOAK)], env, timeout=SECONDS + 120)
    summary = json.loads(result.stdout.splitlines()[-1])
    done = [sum(counts.values()) for counts in summary["tasks"].values()]
    assert all(count > 0 for count in done), f"a thread finished no task: {summary}"
    kinds = {task for counts in summary["tasks"].values() for task in counts}
    assert len(kinds) == 8, f"some kinds of task never ran: {summary}"
    return summary


def test_soak_with_one_thread_per_stream():
    # Every stream (each device's default stream included) has a single user thread.
    soak(OPENREG_SOAK_SHARED="0", OPENREG_SOAK_EMPTY_CACHE="0")


def test_soak_with_shared_streams_and_empty_cache():
    # As programs run: threads share the default streams and pool streams, and one more
    # thread empties the caches all along. A hang shows within 5 s of the last progress.
    soak(OPENREG_SOAK_SHARED="1", OPENREG_SOAK_EMPTY_CACHE="1", OPENREG_SOAK_STALL="5")


# ------------------------------------------------------------------------ reduced cases

def test_kernel_allocations_never_take_memory_that_queued_work_still_reads():
    # Checked after the helper returns, so that a failure keeps no device memory alive.
    result = copy_queued_behind_a_running_kernel(n=1000)
    correct = torch.equal(result, torch.arange(1000, dtype=torch.float32) * 2)
    assert correct, f"the copy read {result[:4].tolist()}..., not [0.0, 2.0, 4.0, 6.0]..."


def copy_queued_behind_a_running_kernel(n: int) -> torch.Tensor:
    """What a copy queued behind a running kernel reads from memory freed meanwhile. A
    Python CPU kernel lets the test act while a kernel runs on the default stream."""
    namespace = f"reliability_{uuid.uuid4().hex[:8]}"
    library = torch.library.Library(namespace, "DEF")  # unregistered when collected
    library.define("running_kernel(Tensor x) -> Tensor")
    started, queued = threading.Event(), threading.Event()

    def running_kernel(x):  # holds its place in the default stream's order while it runs
        started.set()
        assert queued.wait(20)
        torch.full((n,), -1.0)  # device memory (kernel allocations are routed), written now
        return x.clone()

    library.impl("running_kernel", running_kernel, "CPU")
    source = torch.arange(n, dtype=torch.float32, device="openreg")
    doubled = [source * 2]
    result = torch.empty(n, pin_memory=True)

    def other_thread():  # also on the default stream of openreg:0
        assert started.wait(20)
        result.copy_(doubled[0], non_blocking=True)  # queued behind the running kernel
        doubled.clear()  # its memory returns to the cache while the copy is still queued
        queued.set()

    thread = threading.Thread(target=other_thread)
    thread.start()
    getattr(torch.ops, namespace).running_kernel(source)
    thread.join()
    torch.openreg.synchronize()
    return result.clone()


def test_empty_cache_while_other_threads_run_kernels(tmp_path):
    script = tmp_path / "empty_cache.py"
    script.write_text(textwrap.dedent("""
        import faulthandler, threading, time, torch
        stop = False

        def sort_in_a_loop(device):  # sort allocates scratch while it runs
            with torch.openreg.device(device), torch.openreg.stream(torch.openreg.Stream()):
                values = torch.randn(20000, device="openreg")
                while not stop:
                    values.sort()

        threads = [threading.Thread(target=sort_in_a_loop, args=(d,)) for d in (0, 1, 0)]
        for thread in threads:
            thread.start()
        faulthandler.dump_traceback_later(4, exit=True)  # ends a deadlock, with the stacks
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            torch.openreg.empty_cache()
        stop = True
        for thread in threads:
            thread.join()
    """))
    run_script([str(script)], {}, timeout=120)
