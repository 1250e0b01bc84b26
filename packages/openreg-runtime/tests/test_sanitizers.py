"""The py311-sanitize tox env really runs an instrumented runtime with the
sanitizers active and fatal. Only there (it sets OPENREG_EXPECT_SANITIZERS=1):
elsewhere the build is a normal one and these checks do not apply."""

import os
import re
from pathlib import Path

import pytest

import openreg_runtime as rt
from runtime_helpers import run_python

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
