"""A child forked after initialisation cannot use the runtime."""

import os

import openreg_runtime as rt
from runtime_helpers import run_ok


def _in_child(fn) -> str:
    """Run fn() in a forked child and return what it wrote to a pipe."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.close(read_fd)
            os.write(write_fd, fn().encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as f:
        data = f.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return data


def test_forked_child_gets_forked_process_error():
    p = rt.malloc(4096)
    s = rt.Stream()

    def child():
        results = []
        for call in (rt.device_count, lambda: rt.malloc(16), lambda: rt.free(p), s.query, rt.synchronize):
            try:
                call()
                results.append("no error")
            except rt.OpenRegError as e:
                results.append(f"{e.code} {'fork' in str(e)}")
        results.append(str(rt.device_of_pointer(p)))  # nothing is mapped here
        return ",".join(results)

    assert _in_child(child) == ",".join(["700 True"] * 5 + ["-1"])
    # The parent is unaffected.
    rt.memset(p, 1, 4096)
    rt.free(p)
    assert rt.device_count() >= 1


def test_fork_before_initialisation_is_fine():
    out = run_ok(
        """
        import os
        import openreg_runtime as r
        pid = os.fork()  # nothing initialised yet
        if pid == 0:
            p = r.malloc(64)
            r.memset(p, 3, 64)
            os._exit(0 if r.copy_from_device(p, 64) == bytes([3]) * 64 else 1)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
        """
    )
    assert out.strip() == "0"


def test_count_without_initialising_keeps_fork_usable():
    out = run_ok(
        """
        import os
        import openreg_runtime as r
        print(r._C._get_device_count_no_init(), r._C._is_in_bad_fork())
        pid = os.fork()  # the count above did not start the runtime
        if pid == 0:
            p = r.malloc(64)
            r.memset(p, 7, 64)
            ok = r.copy_from_device(p, 64) == bytes([7]) * 64 and not r._C._is_in_bad_fork()
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
        """,
        {"OPENREG_DEVICE_COUNT": "3"},
    )
    assert out.split() == ["3", "False", "0"]


def test_bad_fork_is_reported_without_initialising():
    rt.malloc(16)  # make sure this process has started the runtime

    def child():
        return f"{rt._C._is_in_bad_fork()} {rt._C._get_device_count_no_init()}"

    # The child is in a bad fork; it still reports the configured devices, like NVML.
    assert _in_child(child) == f"True {rt.device_count()}"
    assert rt._C._is_in_bad_fork() is False


def test_configuration_is_read_once_by_the_first_count():
    out = run_ok(
        """
        import os
        import openreg_runtime as r
        print(r._C._get_device_count_no_init())
        os.environ["OPENREG_DEVICE_COUNT"] = "1"  # too late: already read
        print(r.device_count(), r._C._get_device_count_no_init())
        """,
        {"OPENREG_DEVICE_COUNT": "3"},
    )
    assert out.split() == ["3", "3", "3"]


def test_malformed_configuration_fails_the_count_and_initialisation_alike():
    out = run_ok(
        """
        import openreg_runtime as r
        count = r._C._get_device_count_no_init
        for call in (count, r.device_count, count):
            try:
                call()
            except r.OpenRegError as e:
                print(e.name, 'OPENREG_DEVICE_COUNT="two"' in str(e))
        """,
        {"OPENREG_DEVICE_COUNT": "two"},
    )
    assert out.splitlines() == ["orErrorInitializationError True"] * 3
