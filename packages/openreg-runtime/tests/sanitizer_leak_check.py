"""pytest plugin of the py311-sanitize env (`-p sanitizer_leak_check`): one LeakSanitizer
check of the test process when the session ends, which fails the run if it finds a leak.

Why at the end of the session and not at exit (run_sanitized.py sets
leak_check_at_exit=0): at exit, CPython has already dropped the last references to objects
it never frees and static destructors have run, so an exit-time report lists the
interpreter's and libtorch's shutdown, not bugs. While the session is still alive every
object Python, libtorch or openreg means to keep is reachable, so what the check reports
was really lost: a block whose last pointer is gone (a leaked storage context, a dropped
allocator block, an adopted result nobody owns). Two kinds of live object LeakSanitizer
cannot see as reachable are dealt with: CPython objects referenced only from frames
(lsan_suppressions.txt says why) and torch.multiprocessing's cached weak references
(below). Child processes (compilers, spawned workers) run with the same preload but are
not leak-checked: they never call this. When LeakSanitizer's tracer crashes instead of
checking, the session exits with run_sanitized.TRACER_CRASHED, and run_sanitized.py runs it
again.
"""

import ctypes
import gc
import os
import sys

import pytest
from run_sanitized import TRACER_CRASHED

_DEATH_CALLBACK = ctypes.CFUNCTYPE(None)


def _sanitizer_runtime():
    """The process's symbols if the sanitizer runtime is among them, else None."""
    process = ctypes.CDLL(None)
    return process if hasattr(process, "__lsan_do_recoverable_leak_check") else None


def _exit_as_tracer_crash(session_status: int):
    """While the recoverable check runs, the runtime only dies when its tracer failed (a leak
    is reported and returned, not fatal). A session whose tests passed leaves with
    TRACER_CRASHED, to be run again; one whose tests failed keeps its failure."""
    status = TRACER_CRASHED if session_status == 0 else session_status
    sys.stderr.write("\nsanitizer_leak_check: LeakSanitizer's tracer failed; no leak check ran "
                     f"(exit {status})\n")
    sys.stderr.flush()
    os._exit(status)


def pytest_sessionfinish(session):
    runtime = _sanitizer_runtime()
    if runtime is None:
        raise pytest.UsageError("-p sanitizer_leak_check needs a process run by "
                                "run_sanitized.py (no LeakSanitizer runtime is loaded)")
    check = runtime.__lsan_do_recoverable_leak_check
    check.restype = ctypes.c_int
    reductions = sys.modules.get("torch.multiprocessing.reductions")
    if reductions is not None:
        # torch.multiprocessing caches a weak reference to every storage it shared, as a
        # Python int (StorageWeakRef.cdata), which LeakSanitizer cannot read as a pointer: a
        # storage whose tensors are gone would be reported while the cache still owns it.
        # Dropping the cache frees them; the session is over, nothing shares any more.
        reductions.shared_cache.clear()
    # Reference cycles nobody collected yet are unreachable but not leaked.
    gc.collect()
    on_death = _DEATH_CALLBACK(lambda: _exit_as_tracer_crash(int(session.exitstatus)))
    runtime.__sanitizer_set_death_callback(on_death)
    # LeakSanitizer prints its report (allocation stacks) to stderr itself.
    found = check()
    runtime.__sanitizer_set_death_callback(None)  # ASan findings die as usual
    if found != 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        print("\nsanitizer_leak_check: LeakSanitizer found leaks (report above); failing the run")
