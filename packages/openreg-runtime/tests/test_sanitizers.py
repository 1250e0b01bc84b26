"""The py311-sanitize tox env really runs an instrumented runtime with the
sanitizers active and fatal. Only there (it sets OPENREG_EXPECT_SANITIZERS=1):
elsewhere the build is a normal one and these checks do not apply."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import openreg_runtime as rt
from run_sanitized import RERUNS, TRACER_CRASHED
from runtime_helpers import run_process, run_python

pytestmark = pytest.mark.skipif(
    os.environ.get("OPENREG_EXPECT_SANITIZERS") != "1",
    reason="only in the py311-sanitize tox env (OPENREG_EXPECT_SANITIZERS=1)",
)

LIBRARIES = [Path(rt.get_library_dir()) / "libopenreg.so", Path(rt._C.__file__)]


@pytest.mark.parametrize("library", LIBRARIES, ids=lambda p: p.name.split(".")[0])
def test_libraries_are_instrumented(library):
    data = library.read_bytes()
    assert b"__asan_report_store" in data, f"{library} is not built with -fsanitize=address"
    # The *_abort handlers are what -fno-sanitize-recover=undefined emits.
    assert re.search(rb"__ubsan_handle_\w+_abort", data), f"{library} lacks fatal UBSan checks"


def test_asan_runtime_is_loaded():
    maps = Path("/proc/self/maps").read_text()
    assert "libasan" in maps and "libubsan" in maps


def crash(code: str) -> str:
    proc = run_python(f"import openreg_runtime as r\n{code}\nprint('survived')")
    assert "survived" not in proc.stdout, proc.stderr
    assert proc.returncode != 0
    return proc.stderr


def test_heap_overflow_in_the_bindings_is_reported():
    stderr = crash("r._C._sanitizer_selftest('heap-buffer-overflow')")
    assert "ERROR: AddressSanitizer: heap-buffer-overflow" in stderr
    assert "SanitizerSelfTest.cpp" in stderr  # symbolized down to our source


def test_undefined_behaviour_halts():
    stderr = crash("r._C._sanitizer_selftest('signed-integer-overflow')")
    assert "runtime error: signed integer overflow" in stderr


def test_runtime_copy_past_a_host_buffer_is_reported():
    # The runtime can range-check device and pinned memory but not pageable
    # host memory; ASan catches the overrun inside orMemcpy. The buffer is a
    # small bytearray: it has redzones only because PYTHONMALLOC=malloc.
    stderr = crash(
        "import ctypes\n"
        "host = bytearray(16)\n"
        "addr = ctypes.addressof((ctypes.c_char * 16).from_buffer(host))\n"
        "r.memcpy(r.malloc(64), addr, 64, r.MemcpyKind.HOST_TO_DEVICE)"
    )
    assert "ERROR: AddressSanitizer: heap-buffer-overflow" in stderr
    assert "READ of size 64" in stderr
    assert "orMemcpy" in stderr


def sanitized_session(tmp_path, test_body: str, tracer=()) -> "subprocess.CompletedProcess":
    """A one-test pytest session run as the env runs its sessions: run_sanitized.py with the
    sanitizer_leak_check plugin; `tracer` is a command that ptraces it (e.g. strace)."""
    (tmp_path / "test_one.py").write_text(f"def test_one():\n{test_body}\n")
    here = Path(__file__).parent
    return run_process([*tracer, sys.executable, here / "run_sanitized.py", "-m", "pytest",
                        "-q", "-p", "no:cacheprovider", "-p", "sanitizer_leak_check",
                        "--rootdir", tmp_path, tmp_path / "test_one.py"],
                       env={"PYTHONPATH": str(here)}, timeout=120)


def test_a_clean_session_passes_once(tmp_path):
    proc = sanitized_session(tmp_path, "    assert True")
    assert proc.returncode == 0, proc.stderr
    assert "running the command again" not in proc.stderr


def test_a_leaking_session_fails_and_is_not_run_again(tmp_path):
    # A malloc whose only pointer is a Python int, which LeakSanitizer cannot read as one.
    proc = sanitized_session(tmp_path, "    import ctypes\n"
                                       "    ctypes.CDLL(None).malloc(4096)")
    assert proc.returncode == 1, proc.stderr
    assert "ERROR: LeakSanitizer: detected memory leaks" in proc.stderr
    assert "running the command again" not in proc.stderr


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (Debian's strace)")
def test_a_session_whose_leak_check_cannot_run_is_run_again_then_fails(tmp_path):
    # LeakSanitizer cannot stop a process another tracer already ptraces, so under strace its
    # tracer fails every time, as it rarely does by itself: the session runs 1 + RERUNS times
    # and ends with TRACER_CRASHED, never with success.
    proc = sanitized_session(tmp_path, "    assert True",
                             tracer=["strace", "-f", "-qq", "-o", os.devnull, "-e", "trace=none"])
    assert proc.returncode == TRACER_CRASHED, proc.stderr
    assert proc.stderr.count("LeakSanitizer has encountered a fatal error") == RERUNS + 1
    assert proc.stderr.count(f"no leak check ran (exit {TRACER_CRASHED})") == RERUNS + 1
    assert f"running the command again ({RERUNS} of {RERUNS})" in proc.stderr


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (Debian's strace)")
def test_a_failed_session_keeps_its_failure_when_the_leak_check_cannot_run(tmp_path):
    proc = sanitized_session(tmp_path, "    assert False",
                             tracer=["strace", "-f", "-qq", "-o", os.devnull, "-e", "trace=none"])
    assert proc.returncode == 1, proc.stderr
    assert "no leak check ran (exit 1)" in proc.stderr
    assert "running the command again" not in proc.stderr
