"""The py311-sanitize tox env really runs an instrumented openreg-torch with the sanitizers
active and fatal. Only there (it sets OPENREG_EXPECT_SANITIZERS=1): elsewhere the build is
a normal one and these checks do not apply. The runtime's own counterpart is
packages/openreg-runtime/tests/test_sanitizers.py."""

import os
import re
import sys
from pathlib import Path

import pytest

import openreg_torch
from openreg_torch.testing import run_process

pytestmark = pytest.mark.skipif(
    os.environ.get("OPENREG_EXPECT_SANITIZERS") != "1",
    reason="only in the py311-sanitize tox env (OPENREG_EXPECT_SANITIZERS=1)",
)

LIBRARIES = [Path(openreg_torch.get_library_dir()) / "libopenreg_torch.so",
             Path(openreg_torch._C.__file__)]


@pytest.mark.parametrize("library", LIBRARIES, ids=lambda p: p.name.split(".")[0])
def test_libraries_are_instrumented(library):
    data = library.read_bytes()
    assert b"__asan_report_load" in data, f"{library} is not built with -fsanitize=address"
    # The *_abort handlers are what -fno-sanitize-recover=undefined emits.
    assert re.search(rb"__ubsan_handle_\w+_abort", data), f"{library} lacks fatal UBSan checks"


def test_the_instrumented_libraries_are_the_loaded_ones():
    # Not some other copy on the path: the very files checked above are mapped, next to
    # the sanitizer runtimes.
    maps = Path("/proc/self/maps").read_text()
    for library in LIBRARIES:
        assert str(library.resolve()) in maps
    assert "libasan" in maps and "libubsan" in maps


def crash(run_python, code: str) -> str:
    proc = run_python(f"import torch, openreg_torch\n{code}\nprint('survived')")
    assert "survived" not in proc.stdout, proc.stderr
    assert proc.returncode != 0
    return proc.stderr


def test_use_after_free_in_openreg_torch_is_reported(run_python):
    # In a process with libtorch loaded and the env's sanitizer options set.
    stderr = crash(run_python, "openreg_torch._C._sanitizer_selftest('heap-use-after-free')")
    assert "ERROR: AddressSanitizer: heap-use-after-free" in stderr
    assert "SanitizerSelfTest.cpp" in stderr  # symbolized down to our source


def test_undefined_behaviour_in_openreg_torch_halts(run_python):
    stderr = crash(run_python, "openreg_torch._C._sanitizer_selftest('signed-integer-overflow')")
    assert "runtime error: signed integer overflow" in stderr


def test_a_leak_in_openreg_torch_is_found_by_the_session_leak_check(run_python):
    # What the sanitizer_leak_check plugin calls at the end of the env's test sessions.
    proc = run_python(
        "import ctypes, gc, torch, openreg_torch\n"
        "x = torch.ones(4, device='openreg') + 1  # live objects are not leaks\n"
        "check = ctypes.CDLL(None).__lsan_do_recoverable_leak_check\n"
        "gc.collect()  # uncollected cycles are unreachable, not leaked\n"
        "print('clean' if check() == 0 else 'leaked')\n"
        "openreg_torch._C._sanitizer_selftest('leak')\n"
        "print('clean' if check() == 0 else 'leaked')\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["clean", "leaked"], proc.stderr
    assert "ERROR: LeakSanitizer: detected memory leaks" in proc.stderr
    assert "SanitizerSelfTest.cpp" in proc.stderr


def test_the_session_leak_check_fails_a_run_that_leaked(tmp_path):
    # The env's sanitizer_leak_check plugin, in a pytest session of its own whose one test
    # passes but leaks: the session must fail and show where the block was allocated.
    (tmp_path / "test_leaky.py").write_text(
        "import openreg_torch\n"
        "def test_leaks():\n"
        "    openreg_torch._C._sanitizer_selftest('leak')\n"
    )
    plugins = Path(__file__).resolve().parents[2] / "openreg-runtime" / "tests"
    proc = run_process(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-p", "sanitizer_leak_check", "test_leaky.py"],
        env={"PYTHONPATH": str(plugins)}, cwd=tmp_path)
    assert "1 passed" in proc.stdout, proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "LeakSanitizer found leaks" in proc.stdout
    assert "SanitizerSelfTest.cpp" in proc.stderr
