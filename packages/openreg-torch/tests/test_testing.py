"""openreg_torch.testing, the test support every openreg package's tests use: the
subprocess runner's environment policy and process-group cleanup, the device/stream
restore and the CPU comparison."""

import json
import os
import resource
import select
import signal
import subprocess
import threading

import pytest
import torch

from openreg_torch.testing import (
    ChildTimeout,
    assert_matches_cpu,
    child_env,
    preserved_device_and_streams,
    run_process,
    run_python,
)

openreg = torch.openreg
EXIT_WAIT_SECONDS = 60  # how long a killed process may take to be gone (a bound, not a guess)


# ------------------------------------------------------------------- environment policy

POLICY_CASES = {
    "PATH": ("/bin", True), "HOME": ("/home/x", True), "TMPDIR": ("/tmp/x", True),
    "LC_ALL": ("C.UTF-8", True), "PYTHONFAULTHANDLER": ("1", True),
    "OPENREG_DEVICE_MEMORY": ("1GiB", True), "TORCHINDUCTOR_CACHE_DIR": ("/tmp/i", True),
    "ASAN_OPTIONS": ("halt_on_error=1", True), "LD_PRELOAD": ("/lib/x.so", True),
    "CUDA_VISIBLE_DEVICES": ("0", False), "TORCH_LOGS": ("+dynamo", False),
    "VIRTUAL_ENV": ("/venv", False), "SOME_SHELL_SETTING": ("x", False),
}


def test_child_env_passes_on_only_the_policys_variables(monkeypatch):
    for name in list(os.environ):
        monkeypatch.delenv(name)
    for name, (value, _) in POLICY_CASES.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
    expected = {name: value for name, (value, passed) in POLICY_CASES.items() if passed}
    assert child_env() == {**expected, "TORCH_DEVICE_BACKEND_AUTOLOAD": "1"}
    # A call's env sets, and with None removes, after the policy.
    assert child_env({"OPENREG_DEVICE_MEMORY": None, "TORCH_DEVICE_BACKEND_AUTOLOAD": None,
                      "OPENREG_FALLBACK": "copy"}) == {
        **{k: v for k, v in expected.items() if k != "OPENREG_DEVICE_MEMORY"},
        "OPENREG_FALLBACK": "copy"}


def test_the_child_sees_exactly_the_policys_environment(monkeypatch):
    monkeypatch.setenv("SOME_SHELL_SETTING", "x")
    monkeypatch.setenv("OPENREG_SOME_SETTING", "y")
    result = run_python("import json, os; print(json.dumps(dict(os.environ)))",
                        env={"EXTRA": "z"})
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    # Python itself may add LC_CTYPE (PEP 538 locale coercion).
    seen.pop("LC_CTYPE", None)
    wanted = child_env({"EXTRA": "z"})
    wanted.pop("LC_CTYPE", None)
    assert seen == wanted
    assert "SOME_SHELL_SETTING" not in seen and seen["OPENREG_SOME_SETTING"] == "y"


def test_children_start_without_core_dumps_and_ours_is_unchanged():
    before = resource.getrlimit(resource.RLIMIT_CORE)
    result = run_python("import resource; print(resource.getrlimit(resource.RLIMIT_CORE)[0])")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0"
    assert resource.getrlimit(resource.RLIMIT_CORE) == before


# ------------------------------------------------------------------ timeouts and cleanup

def test_every_call_needs_a_positive_timeout():
    for timeout in (None, 0, -1):
        with pytest.raises(ValueError, match="positive timeout"):
            run_process(["true"], timeout=timeout)


def test_timeout_raises_child_timeout():
    with pytest.raises(ChildTimeout, match="process group was killed") as info:
        run_python("import signal; signal.pause()", timeout=1)
    assert isinstance(info.value, subprocess.TimeoutExpired) and info.value.timeout == 1


def wait_until_gone(pid: int) -> bool:
    """Whether `pid` has exited (a zombie counts: it runs no code any more)."""
    try:
        descriptor = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([descriptor], [], [], EXIT_WAIT_SECONDS)[0])
    finally:
        os.close(descriptor)


GRANDCHILD = """
    import os, signal
    pid = os.fork()
    if pid == 0:
        {grandchild}
        signal.pause()
    with open({report!r}, "w") as report:  # once both processes exist
        report.write(str(pid))
    {child}
"""


def test_an_interrupted_call_kills_the_whole_process_group(tmp_path):
    # The call is interrupted (as by Ctrl-C) once both processes exist, which the child
    # says through a FIFO: no waiting on time.
    fifo = tmp_path / "grandchild.pid"
    os.mkfifo(fifo)
    code = GRANDCHILD.format(report=str(fifo), grandchild="pass", child="signal.pause()")
    reported = []

    class Interrupted(Exception):
        pass

    def interrupt(signum, frame):
        raise Interrupted

    def interrupt_when_reported():
        with open(fifo) as report:  # blocks until the child opens it
            reported.append(report.read())
        if reported[0]:
            signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)

    previous = signal.signal(signal.SIGUSR1, interrupt)
    watcher = threading.Thread(target=interrupt_when_reported)
    watcher.start()
    try:
        with pytest.raises(Interrupted):
            run_python(code, timeout=120)
    finally:
        if watcher.is_alive() and not reported:  # the child never got there: release it
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        watcher.join()
        signal.signal(signal.SIGUSR1, previous)
    assert wait_until_gone(int(reported[0]))


def test_descendants_that_outlive_the_child_are_killed_on_return(tmp_path):
    report = tmp_path / "grandchild.pid"
    # The grandchild lets go of the output pipes, so the call returns when the child exits.
    code = GRANDCHILD.format(
        report=str(report),
        grandchild="null = os.open(os.devnull, os.O_RDWR); os.dup2(null, 1); os.dup2(null, 2)",
        child="print('child done')")
    result = run_python(code, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "child done"
    assert wait_until_gone(int(report.read_text()))


# ---------------------------------------------------------------- device and streams

def test_preserved_device_and_streams_restores_after_an_exception():
    stream1 = openreg.Stream(device=1)
    with pytest.raises(ValueError):
        with preserved_device_and_streams():
            openreg.set_stream(stream1)
            openreg.set_stream(openreg.Stream(device=0))
            openreg.set_device(1)
            raise ValueError
    assert openreg.current_device() == 0
    assert openreg.current_stream(0) == openreg.default_stream(0)
    assert openreg.current_stream(1) == openreg.default_stream(1)


def test_preserved_device_and_streams_restores_a_non_default_state():
    stream1 = openreg.Stream(device=1)
    openreg.set_stream(stream1)  # device 1 is current; the autouse fixture undoes this
    with preserved_device_and_streams():
        openreg.set_stream(openreg.default_stream(1))
        openreg.set_device(0)
    assert openreg.current_device() == 1
    assert openreg.current_stream(1) == stream1


# ------------------------------------------------------------------ CPU comparison

def test_matches_cpu_returns_both_results():
    cpu, device = assert_matches_cpu(lambda a, b: (a @ b, a.sum().item()),
                                     torch.randn(3, 4), torch.randn(4, 2))
    assert cpu[0].device.type == "cpu" and device[0].device == torch.device("openreg", 0)
    assert isinstance(device[1], float)


def test_values_that_differ_fail():
    with pytest.raises(AssertionError, match=r"result: Tensor-likes are not close"):
        assert_matches_cpu(lambda t: t + (t.device.type == "openreg"), torch.zeros(3))


def test_dtypes_that_differ_fail():
    with pytest.raises(AssertionError, match="dtype"):
        assert_matches_cpu(lambda t: t.double() if t.is_openreg else t, torch.zeros(3))


def test_a_result_off_the_device_fails():
    with pytest.raises(AssertionError, match=r"result\[1\]: on cpu, expected on openreg"):
        assert_matches_cpu(lambda t: (t, t.cpu()), torch.zeros(3))
    with pytest.raises(AssertionError, match=r"on openreg:0, expected on openreg:1"):
        assert_matches_cpu(lambda t: t.to("openreg:0") if t.is_openreg else t, torch.zeros(3),
                           device="openreg:1")
    _, on_one = assert_matches_cpu(lambda t: t + 1, torch.zeros(3), device="openreg:1")
    assert on_one.device == torch.device("openreg", 1)


def test_structures_that_differ_fail():
    with pytest.raises(AssertionError, match="structure differs"):
        assert_matches_cpu(lambda t: (t,) if t.is_openreg else [t], torch.zeros(3))
    with pytest.raises(AssertionError, match=r"result\['b'\]: 'openreg' on openreg, 'cpu' on"):
        assert_matches_cpu(lambda t: {"a": t, "b": t.device.type}, torch.zeros(3))


def test_requires_grad_that_differs_fails():
    with pytest.raises(AssertionError, match="requires_grad is False on openreg"):
        assert_matches_cpu(lambda t: (t * 2).detach() if t.is_openreg else t * 2,
                           torch.zeros(3, requires_grad=True))


def test_in_place_changes_to_arguments_are_compared():
    assert_matches_cpu(lambda t: t.add_(1), torch.zeros(3))
    with pytest.raises(AssertionError, match=r"argument\[0\]: Tensor-likes are not close"):
        assert_matches_cpu(lambda t: t.add_(1 + t.is_openreg).sum().item() * 0, torch.zeros(3))
    caller = torch.zeros(3)
    assert_matches_cpu(lambda t: t.add_(1), caller)
    assert caller.tolist() == [0.0, 0.0, 0.0]  # each run had its own copy


def test_copies_keep_strides_and_requires_grad():
    strided = torch.randn(4, 10)[:, ::2]
    seen = []
    assert_matches_cpu(lambda t: seen.append((t.device.type, t.stride(), t.requires_grad)),
                       strided)
    assert seen == [("cpu", (10, 2), False), ("openreg", (10, 2), False)]
    expanded = torch.randn(3, 1).expand(3, 4)  # overlapping: copied contiguous
    assert_matches_cpu(lambda t: t * 2, expanded)
    leaf = torch.randn(3, requires_grad=True)
    assert_matches_cpu(lambda t: torch.autograd.grad(t.sin().sum(), t), leaf)


def test_inputs_must_be_on_the_cpu():
    with pytest.raises(ValueError, match="takes CPU tensors .* got a tensor on openreg:0"):
        assert_matches_cpu(torch.neg, torch.zeros(3, device="openreg"))
