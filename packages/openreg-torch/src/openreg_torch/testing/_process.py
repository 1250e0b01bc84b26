"""Python in a fresh interpreter, with an environment that follows a written policy.

Tests need a fresh interpreter for what a process decides once (the runtime reads OPENREG_*
when it initialises; autoload happens at ``import torch``) and for what must end a process
(fatal diagnostics, fork). The child does not simply inherit the test process's
environment: it gets the variables of this policy, so it is the same child wherever the
tests run (a developer's shell, tox, CI).

* Passed on from the test process when set: the names in ``ENV_PASSED_ON`` and every name
  starting with one of ``ENV_PASSED_ON_PREFIXES``: what starts the interpreter (``PATH``,
  ``LD_LIBRARY_PATH``, ``LD_PRELOAD``, ``PYTHON*``: sanitizer runs preload their runtimes
  and set ``PYTHONMALLOC``), who runs it (``USER``, ``LOGNAME``), where files go (``HOME``,
  ``TMPDIR``, ``TORCHINDUCTOR_*`` with Inductor's cache directory), the locale, openreg's own configuration (``OPENREG_*``: the
  child runs with the same devices, memory and fallback mode as the tests) and the
  sanitizers' options.
* Set: ``ENV_SET``. ``TORCH_DEVICE_BACKEND_AUTOLOAD=1``: the child starts as a user's
  ``import torch`` does, whatever the test process was started with.
* Then the call's ``env``: a string sets a variable, ``None`` removes it.

Nothing else is passed on (``CUDA_*``, ``TORCH_LOGS``, ``VIRTUAL_ENV``...). The runtime's
own tests (no torch) have a copy of this policy in ``runtime_helpers.py``;
``tests/test_runtime_and_torch.py`` checks that the two agree.

Every call has a timeout. The child leads a new session, so its descendants (forked
children, spawned workers) are in its process group: the whole group is killed on timeout,
on any interruption (Ctrl-C) and when the call returns, and a timeout raises
``ChildTimeout`` carrying the output so far. Children start with core dumps off: tests crash
them on purpose.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

__all__ = ["ENV_PASSED_ON", "ENV_PASSED_ON_PREFIXES", "ENV_SET", "ChildTimeout", "child_env",
           "run_process", "run_python"]

ENV_PASSED_ON = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "LANG", "LD_LIBRARY_PATH", "LD_PRELOAD",
})
ENV_PASSED_ON_PREFIXES = ("LC_", "PYTHON", "OPENREG_", "TORCHINDUCTOR_", "ASAN_", "UBSAN_",
                          "LSAN_")
ENV_SET = {"TORCH_DEVICE_BACKEND_AUTOLOAD": "1"}

DEFAULT_TIMEOUT = 120.0
# After a kill, how long the output pipes may take to close (they stay open only if a
# descendant left the process group and still holds them).
_DRAIN_SECONDS = 10.0
_core_limit_lock = threading.Lock()


class ChildTimeout(subprocess.TimeoutExpired):
    """The child ran past its timeout and was killed with its process group."""

    def __str__(self) -> str:
        def tail(text: str | bytes | None) -> str:
            text = text.decode(errors="replace") if isinstance(text, bytes) else text or ""
            return text[-4000:]

        return (f"{super().__str__()}; its process group was killed\n"
                f"--- stdout (end) ---\n{tail(self.stdout)}\n"
                f"--- stderr (end) ---\n{tail(self.stderr)}")


def child_env(env: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """The environment of a child process under the policy above."""
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
def _children_without_core_dumps() -> Iterator[None]:
    # A child inherits the limit at fork. Lowering ours around Popen avoids a preexec_fn,
    # which is unsafe in a process with threads (the runtime's stream workers).
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
        pass  # the group is already gone


def _output_after_kill(process: subprocess.Popen) -> tuple[str, str]:
    try:
        return process.communicate(timeout=_DRAIN_SECONDS)
    except subprocess.TimeoutExpired:
        for pipe in (process.stdout, process.stderr):
            pipe.close()
        process.wait()
        return "", "(output lost: a process outside the killed group held the pipes)"


def run_process(argv: Sequence[str], env: Mapping[str, str | None] | None = None,
                timeout: float = DEFAULT_TIMEOUT,
                cwd: str | os.PathLike | None = None) -> subprocess.CompletedProcess[str]:
    """Run `argv` under the environment policy and return its exit status and output
    (text). Raises ChildTimeout after `timeout` seconds."""
    if not timeout or timeout <= 0:
        raise ValueError(f"run_process needs a positive timeout in seconds, got {timeout!r}")
    argv = [os.fspath(arg) for arg in argv]
    with _children_without_core_dumps():
        process = subprocess.Popen(argv, env=child_env(env), cwd=cwd, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except BaseException as error:
        _kill_group(process)
        stdout, stderr = _output_after_kill(process)
        if isinstance(error, subprocess.TimeoutExpired):
            raise ChildTimeout(argv, timeout, stdout, stderr) from None
        raise
    _kill_group(process)  # descendants that outlived the child
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)


def run_python(code: str, env: Mapping[str, str | None] | None = None,
               timeout: float = DEFAULT_TIMEOUT) -> subprocess.CompletedProcess[str]:
    """Run `code` (dedented) as a script in a fresh interpreter of this Python.

    A script file rather than ``-c``: tracebacks show its lines, and ``multiprocessing``'s
    spawn start method can import its ``__main__``."""
    with tempfile.TemporaryDirectory(prefix="openreg-test-") as directory:
        script = Path(directory, "script.py")
        script.write_text(textwrap.dedent(code))
        return run_process([sys.executable, str(script)], env, timeout)
