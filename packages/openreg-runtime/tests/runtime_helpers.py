"""Helpers shared by the runtime tests (on pytest's pythonpath, see pyproject.toml).

The runtime reads its environment once per process, so anything that depends on
OPENREG_* variables (or must crash) runs in a fresh interpreter through `run_python`.

Children get the environment policy of openreg_torch.testing (see its _process.py for the
reasons): these tests cannot import it (the runtime has no torch, e.g. in py311-sanitize),
so the policy is repeated here and tests/test_runtime_and_torch.py checks the copies agree.
Every call has a timeout and kills the child's process group when it ends."""

import contextlib
import os
import queue
import resource
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

import openreg_runtime as rt

DEVICE_COUNT = int(os.environ.get("OPENREG_DEVICE_COUNT", "2"))
requires_two_devices = pytest.mark.skipif(DEVICE_COUNT < 2, reason="needs 2 devices")

# The policy: passed on when set, then set; a call's env then sets (or with None, removes).
ENV_PASSED_ON = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "LANG", "LD_LIBRARY_PATH", "LD_PRELOAD",
})
ENV_PASSED_ON_PREFIXES = ("LC_", "PYTHON", "OPENREG_", "TORCHINDUCTOR_", "ASAN_", "UBSAN_",
                          "LSAN_")
ENV_SET = {"TORCH_DEVICE_BACKEND_AUTOLOAD": "1"}
DRAIN_SECONDS = 10.0
_core_limit_lock = threading.Lock()


def child_env(env: "dict | None" = None) -> dict:
    result = {name: value for name, value in os.environ.items()
              if name in ENV_PASSED_ON or name.startswith(ENV_PASSED_ON_PREFIXES)}
    result.update(ENV_SET)
    for name, value in (env or {}).items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = value
    return result


@contextlib.contextmanager
def _children_without_core_dumps():
    # Inherited at fork; no preexec_fn (unsafe with the runtime's worker threads).
    with _core_limit_lock:
        soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
        resource.setrlimit(resource.RLIMIT_CORE, (0, hard))
        try:
            yield
        finally:
            resource.setrlimit(resource.RLIMIT_CORE, (soft, hard))


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_process(argv: list, env: "dict | None" = None,
                timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `argv` under the policy; raises subprocess.TimeoutExpired (with the output so
    far) after `timeout` seconds, the child's process group killed."""
    if not timeout or timeout <= 0:
        raise ValueError(f"run_process needs a positive timeout in seconds, got {timeout!r}")
    argv = [os.fspath(arg) for arg in argv]
    with _children_without_core_dumps():
        process = subprocess.Popen(argv, env=child_env(env), stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except BaseException as error:
        _kill_group(process)
        try:
            stdout, stderr = process.communicate(timeout=DRAIN_SECONDS)
        except subprocess.TimeoutExpired:
            process.stdout.close()
            process.stderr.close()
            process.wait()
            stdout, stderr = "", "(output lost: a process outside the killed group held the pipes)"
        if isinstance(error, subprocess.TimeoutExpired):
            raise subprocess.TimeoutExpired(argv, timeout, stdout, stderr) from None
        raise
    _kill_group(process)  # descendants that outlived the child
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)


def run_python(code: str, env: "dict | None" = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `code` in a new interpreter with extra environment variables."""
    return run_process([sys.executable, "-c", textwrap.dedent(code)], env, timeout)


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
        self.timeout = timeout
        # The module's environment policy; the peer keeps its own group (killed on exit).
        with _children_without_core_dumps():
            self.proc = subprocess.Popen(
                [sys.executable, "-c", code],
                env=child_env(env),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
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
        _kill_group(self.proc)
