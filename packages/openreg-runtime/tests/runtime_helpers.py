"""Helpers shared by the runtime tests (on pytest's pythonpath, see pyproject.toml).

The runtime reads its environment once per process, so anything that depends on
OPENREG_* variables (or must crash) runs in a fresh interpreter through `run_python`."""

import contextlib
import os
import resource
import subprocess
import sys
import textwrap

import pytest

import openreg_runtime as rt

DEVICE_COUNT = int(os.environ.get("OPENREG_DEVICE_COUNT", "2"))
requires_two_devices = pytest.mark.skipif(DEVICE_COUNT < 2, reason="needs 2 devices")


def _no_core_dump():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_python(code: str, env: "dict | None" = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `code` in a new interpreter with extra environment variables."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("OPENREG_")}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_no_core_dump,
    )


def run_ok(code: str, env: "dict | None" = None) -> str:
    """Run `code` expecting success; returns its stdout."""
    proc = run_python(code, env)
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout


def error_code(name: str) -> int:
    return rt._C._error_codes[name]


@contextlib.contextmanager
def raises(name: str):
    """Expect an OpenRegError with the given orError name."""
    with pytest.raises(rt.OpenRegError) as info:
        yield info
    assert info.value.name == name, str(info.value)
