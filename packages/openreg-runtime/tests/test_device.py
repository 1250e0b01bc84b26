"""Device management and the OPENREG_* environment variables."""

import re
import threading
from pathlib import Path

import pytest

import openreg_runtime as rt
from runtime_helpers import DEVICE_COUNT, error_code, requires_two_devices, run_ok, run_python


def test_default_device_count():
    assert rt.device_count() == DEVICE_COUNT


def test_current_device_is_per_thread():
    rt.set_device(DEVICE_COUNT - 1)
    assert rt.current_device() == DEVICE_COUNT - 1
    seen = []
    t = threading.Thread(target=lambda: seen.append(rt.current_device()))
    t.start()
    t.join()
    assert seen == [0]  # a new thread starts on device 0, as in CUDA


@pytest.mark.parametrize("bad", [-1, -100, DEVICE_COUNT, 64, 2**31 - 1])
def test_set_device_out_of_range(bad):
    rt.set_device(0)
    with pytest.raises(rt.OpenRegError) as info:
        rt.set_device(bad)
    assert info.value.code == error_code("orErrorInvalidDevice")
    assert f"device index {bad} is out of range" in str(info.value)
    assert f"valid indices 0..{DEVICE_COUNT - 1}" in str(info.value)
    assert rt.current_device() == 0  # unchanged


def test_properties():
    for d in range(DEVICE_COUNT):
        p = rt.get_device_properties(d)
        assert p.name == "openreg simulated device"
        assert p.total_memory == 8 << 30
        assert p.memory_alignment == 512
        assert (p.major, p.minor) == (1, 0)
        assert p.multi_processor_count >= 1


@pytest.mark.parametrize("bad", [-1, DEVICE_COUNT])
def test_properties_bad_device(bad):
    with pytest.raises(rt.OpenRegError) as info:
        rt.get_device_properties(bad)
    assert info.value.code == error_code("orErrorInvalidDevice")


def test_mem_get_info_tracks_allocations(device_buffer):
    free0, total = rt.mem_get_info()
    assert total == 8 << 30
    device_buffer(1000)  # rounded up to the 512-byte granule
    free1, _ = rt.mem_get_info()
    assert free0 - free1 == 1024


@requires_two_devices
def test_mem_get_info_is_per_device(device_buffer):
    rt.set_device(1)
    before = rt.mem_get_info()[0]
    device_buffer(1 << 20, device=0)
    assert rt.mem_get_info()[0] == before


def test_priority_range_and_version():
    assert rt.stream_priority_range() == (0, -2)
    assert rt.runtime_version() == 1000


def test_synchronize_waits_for_all_streams_of_the_device():
    import time

    log = []
    streams = [rt.Stream(), rt.Stream(), rt.Stream.default()]
    for i, s in enumerate(streams):
        s.launch_host_func(lambda i=i: (time.sleep(0.05), log.append(i)))
    rt.synchronize()
    assert sorted(log) == [0, 1, 2]
    assert all(s.query() for s in streams)


@requires_two_devices
def test_synchronize_other_device_leaves_current():
    rt.set_device(0)
    rt.synchronize(1)
    assert rt.current_device() == 0


def test_fault_handler_can_be_reinstalled():
    rt.install_fault_handler()
    rt.install_fault_handler()


# ---------------------------------------------------------------- environment


@pytest.mark.parametrize("count", ["0", "1", "5", "64"])
def test_device_count_env(count):
    out = run_ok("import openreg_runtime as r; print(r.device_count())", {"OPENREG_DEVICE_COUNT": count})
    assert out.strip() == count


def test_no_device():
    out = run_ok(
        """
        import openreg_runtime as r
        assert r.device_count() == 0
        for call in (lambda: r.set_device(0), lambda: r.malloc(16), r.mem_get_info, r.Stream):
            try:
                call()
            except r.OpenRegError as e:
                print(e.name, "OPENREG_DEVICE_COUNT=0" in str(e))
        """,
        {"OPENREG_DEVICE_COUNT": "0"},
    )
    assert out.split("\n")[:4] == ["orErrorNoDevice True"] * 4


@pytest.mark.parametrize("value", ["65", "-1", "two", "", "2.0", "3 "])
def test_malformed_device_count(value):
    out = run_ok(
        """
        import openreg_runtime as r
        for call in (r.device_count, lambda: r.malloc(1)):
            try:
                call()
            except r.OpenRegError as e:
                print(e.name)
                print(e)
        """,
        {"OPENREG_DEVICE_COUNT": value},
    )
    lines = out.splitlines()
    # The failure is sticky and reported by every call.
    assert lines[0] == lines[2] == "orErrorInitializationError"
    assert f'OPENREG_DEVICE_COUNT="{value}"' in lines[1]
    assert "0 to 64" in lines[1]


@pytest.mark.parametrize(
    "value,expected",
    [
        ("8GiB", 8 << 30),
        ("512MiB", 512 << 20),
        ("64KiB", 64 << 10),
        ("2G", 2 << 30),
        ("1.5GiB", 3 << 29),
        ("1073741824", 1 << 30),
        ("100mb", 100 << 20),
        ("1TiB", 1 << 40),
        ("4096B", 4096),
    ],
)
def test_device_memory_env(value, expected):
    out = run_ok(
        "import openreg_runtime as r; print(r.get_device_properties(0).total_memory, r.mem_get_info()[1])",
        {"OPENREG_DEVICE_MEMORY": value},
    )
    assert out.split() == [str(expected), str(expected)]


@pytest.mark.parametrize("value", ["lots", "12XB", "-5", "0", "1.5.5G", "2TiB", "G", "1e9", "99999999999999999999"])
def test_malformed_device_memory(value):
    proc = run_python(
        """
        import openreg_runtime as r
        try:
            r.device_count()
        except r.OpenRegError as e:
            print(e.name)
            print(e)
        """,
        {"OPENREG_DEVICE_MEMORY": value},
    )
    name, message = proc.stdout.splitlines()
    assert name == "orErrorInitializationError"
    assert f'OPENREG_DEVICE_MEMORY="{value}"' in message
    assert "512MiB" in message and "GiB" in message  # names the accepted forms


@requires_two_devices
def test_device_context_manager_restores():
    rt.set_device(0)
    with rt.device(1):
        assert rt.current_device() == 1
        with rt.device(None):
            assert rt.current_device() == 1
    assert rt.current_device() == 0
    with pytest.raises(rt.OpenRegError):
        with rt.device(DEVICE_COUNT):
            pass
    assert rt.current_device() == 0


def test_header_limits_are_the_ones_the_runtime_enforces():
    # openreg.h exports the device limit and the alignment once, for the runtime and
    # for every package that sizes tables or rounds sizes by them.
    header = (Path(rt.get_include()) / "openreg" / "openreg.h").read_text()
    limits = dict(re.findall(r"^#define (OR_MAX_DEVICES|OR_MEMORY_ALIGNMENT) (\d+)$", header, re.M))
    max_devices, alignment = int(limits["OR_MAX_DEVICES"]), int(limits["OR_MEMORY_ALIGNMENT"])
    assert rt.get_device_properties(0).memory_alignment == alignment
    out = run_ok(
        """
        import openreg_runtime as r
        try:
            r.device_count()
        except r.OpenRegError as e:
            print(e)
        """,
        {"OPENREG_DEVICE_COUNT": str(max_devices + 1)},
    )
    assert f"from 0 to {max_devices} " in out, out
