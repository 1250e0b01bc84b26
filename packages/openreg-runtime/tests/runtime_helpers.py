"""Helpers shared by the runtime tests (on pytest's pythonpath, see pyproject.toml).

The runtime reads its environment once per process, so anything that depends on
OPENREG_* variables (or must crash) runs in a fresh interpreter through `run_python`."""

import contextlib
import os
import queue
import resource
import subprocess
import sys
import textwrap
import threading

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


class Peer:
    """Another process running `code` (a fresh interpreter, so another runtime),
    exchanging lines with the test over its stdin/stdout. Every read waits at
    most `timeout` seconds; leaving the `with` block kills it if still alive."""

    def __init__(self, code: str, env: "dict | None" = None, timeout: float = 60):
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("OPENREG_")}
        full_env.update(env or {})
        self.timeout = timeout
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code],
            env=full_env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_no_core_dump,
        )
        self._lines: "queue.Queue[str | None]" = queue.Queue()
        self._stderr: "list[str]" = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self._lines.put), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self._stderr.append), daemon=True).start()

    @staticmethod
    def _pump(stream, put):
        for line in stream:
            put(line)
        put(None)

    def _failure(self, what: str) -> str:
        return f"{what}; peer stderr:\n{''.join(s for s in self._stderr if s)}"

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def recv(self) -> str:
        try:
            line = self._lines.get(timeout=self.timeout)
        except queue.Empty:
            raise AssertionError(self._failure(f"no line from the peer within {self.timeout} s")) from None
        if line is None:
            self.proc.wait(timeout=self.timeout)
            raise AssertionError(self._failure(f"the peer ended (exit {self.proc.returncode})"))
        return line.rstrip("\n")

    def finish(self) -> None:
        """Wait for a successful exit."""
        self.proc.stdin.close()
        self.proc.wait(timeout=self.timeout)
        assert self.proc.returncode == 0, self._failure(f"exit {self.proc.returncode}")

    def __enter__(self) -> "Peer":
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=self.timeout)
