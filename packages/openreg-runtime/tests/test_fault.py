"""A host read of device memory dies with SIGSEGV after a diagnostic that
names the device and the allocation."""

import re
import signal

from runtime_helpers import requires_two_devices, run_python

TOUCH = """
import ctypes
import openreg_runtime as r
r.set_device({device})
pad = r.malloc(1000)
p = r.malloc(4096)
print(hex(p), flush=True)
{before_touch}
ctypes.string_at(p + 100, 1)
print("survived", flush=True)
"""


def touch(device=0, before_touch="", env=None):
    proc = run_python(TOUCH.format(device=device, before_touch=before_touch), env)
    assert "survived" not in proc.stdout
    assert proc.returncode == -signal.SIGSEGV, proc.stderr
    return int(proc.stdout.split()[0], 16), proc.stderr


def expected_message(p, device):
    return (
        f"openreg: host code accessed device memory at {p + 100:#x}: device {device}, "
        f"allocation {p:#x} (4096 bytes, offset 100). Device memory is only accessible "
        "to device kernels; copy it to the host first (tensor.cpu())."
    )


def test_host_read_of_device_memory_is_diagnosed():
    p, stderr = touch()
    assert expected_message(p, 0) in stderr


@requires_two_devices
def test_diagnostic_names_the_device():
    p, stderr = touch(device=1)
    assert expected_message(p, 1) in stderr


def test_freed_memory_is_diagnosed_too():
    p, stderr = touch(before_touch="r.free(p)")
    assert f"accessed device memory at {p + 100:#x}: device 0, outside any live allocation" in stderr


def test_reinstalled_after_python_faulthandler():
    p, stderr = touch(before_touch="import faulthandler; faulthandler.enable(); r.install_fault_handler()")
    assert expected_message(p, 0) in stderr


def test_other_segfaults_reach_the_previous_handler():
    proc = run_python(
        """
        import ctypes, faulthandler
        import openreg_runtime as r
        faulthandler.enable()
        r.install_fault_handler()  # ours on top, faulthandler behind it
        ctypes.string_at(8, 1)
        """
    )
    assert proc.returncode == -signal.SIGSEGV
    assert "openreg:" not in proc.stderr
    assert "Fatal Python error: Segmentation fault" in proc.stderr


def test_extra_diagnostic_fd(tmp_path):
    log = tmp_path / "fault.log"
    setup = f"import os; fd = os.open({str(log)!r}, os.O_WRONLY | os.O_CREAT); os.environ['OPENREG_FAULT_FD'] = str(fd)"
    proc = run_python(f"{setup}\n" + TOUCH.format(device=0, before_touch=""))
    assert proc.returncode == -signal.SIGSEGV
    p = int(proc.stdout.split()[0], 16)
    assert expected_message(p, 0) in log.read_text()
    assert expected_message(p, 0) in proc.stderr


def test_forked_child_touching_device_memory():
    proc = run_python(
        """
        import ctypes, os
        import openreg_runtime as r
        p = r.malloc(4096)
        pid = os.fork()
        if pid == 0:
            ctypes.string_at(p + 100, 1)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        print(hex(p), os.WIFSIGNALED(status) and os.WTERMSIG(status))
        """
    )
    p, sig = proc.stdout.split()
    assert int(sig) == signal.SIGSEGV
    assert re.search(rf"accessed device memory at {int(p, 16) + 100:#x}: device 0, .*in a forked child", proc.stderr)


def test_kernel_view_is_not_inherited_by_fork():
    # MADV_DONTFORK: a child must not share (or scribble on) the parent's
    # device memory, so even the kernel view is gone in the child.
    proc = run_python(
        """
        import ctypes, os
        import openreg_runtime as r
        p = r.malloc(4096)
        r.memset(p, 7, 4096)
        k = r.kernel_pointer(p)
        pid = os.fork()
        if pid == 0:
            ctypes.string_at(k, 1)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        print(os.WIFSIGNALED(status) and os.WTERMSIG(status), ctypes.string_at(k, 1))
        """
    )
    assert proc.stdout.split() == [str(int(signal.SIGSEGV)), "b'\\x07'"]
