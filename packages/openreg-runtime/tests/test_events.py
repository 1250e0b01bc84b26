"""Events: recording, completion, timing and their error paths."""

import threading
import time

import pytest

import openreg_runtime as rt
from openreg_runtime import _C
from runtime_helpers import raises, requires_two_devices


# Timing bounds come from causality, not from how fast the machine is: both stamps are
# taken between two readings of the host's clock (the same monotonic clock), so the
# elapsed time lies between what the host saw happen in between. A stamp is cut to whole
# microseconds and the result is a float: CLOCK_SLACK_MS covers both.
CLOCK_SLACK_MS = 0.002


def host_ms(start_ns: int, end_ns: int) -> float:
    return (end_ns - start_ns) / 1e6


def test_elapsed_time_of_a_sleeping_host_func():
    s = rt.Stream()
    start, end = rt.Event(enable_timing=True), rt.Event(enable_timing=True)
    before = time.monotonic_ns()
    start.record(s)
    s.launch_host_func(lambda: time.sleep(0.05))
    end.record(s)
    end.synchronize()
    after = time.monotonic_ns()
    ms = start.elapsed_time(end)
    # The sleep lies between the stamps; the stamps lie between `before` and `after`
    # (which also proves the unit is milliseconds).
    assert 50 - CLOCK_SLACK_MS <= ms <= host_ms(before, after) + CLOCK_SLACK_MS
    assert end.elapsed_time(start) == pytest.approx(-ms)


def test_idle_records_complete_at_once():
    # On an idle stream a record completes, and is stamped, within the call.
    start, end = rt.Event(enable_timing=True), rt.Event(enable_timing=True)
    before_start = time.monotonic_ns()
    start.record()
    after_start = time.monotonic_ns()
    time.sleep(0.02)  # something to measure, not a wait for anything
    before_end = time.monotonic_ns()
    end.record()
    after_end = time.monotonic_ns()
    assert start.query() and end.query()
    ms = start.elapsed_time(end)
    assert host_ms(after_start, before_end) - CLOCK_SLACK_MS <= ms
    assert ms <= host_ms(before_start, after_end) + CLOCK_SLACK_MS


def test_query_and_synchronize():
    s = rt.Stream()
    gate = threading.Event()
    s.launch_host_func(gate.wait)
    e = rt.Event()
    e.record(s)
    assert not e.query()
    gate.set()
    e.synchronize()
    assert e.query()


def test_never_recorded_event_is_complete():
    e = rt.Event(enable_timing=True)
    assert e.query()
    e.synchronize()


def test_rerecord_replaces_captured_work():
    busy, idle = rt.Stream(), rt.Stream()
    gate = threading.Event()
    busy.launch_host_func(gate.wait)
    e = rt.Event(enable_timing=True)
    e.record(busy)
    assert not e.query()
    e.record(idle)
    assert e.query()
    gate.set()
    busy.synchronize()


def test_event_records_only_earlier_work():
    s = rt.Stream()
    gate = threading.Event()
    e = rt.Event()
    e.record(s)
    s.launch_host_func(gate.wait)  # issued after the record
    assert e.query()
    gate.set()
    s.synchronize()


def test_elapsed_time_errors():
    timed = rt.Event(enable_timing=True)
    other = rt.Event(enable_timing=True)
    untimed = rt.Event()
    with raises("orErrorInvalidResourceHandle") as info:
        timed.elapsed_time(other)  # neither recorded
    assert "never recorded" in str(info.value)
    timed.record()
    untimed.record()
    with raises("orErrorInvalidResourceHandle") as info:
        timed.elapsed_time(untimed)
    assert "orEventDisableTiming" in str(info.value)

    s = rt.Stream()
    gate = threading.Event()
    s.launch_host_func(gate.wait)
    other.record(s)
    with raises("orErrorNotReady"):
        timed.elapsed_time(other)
    gate.set()
    other.synchronize()
    assert timed.elapsed_time(other) >= 0


def test_destroyed_event_handle_is_rejected():
    e = rt.Event(enable_timing=True)
    h = e.handle
    e.destroy()
    live = rt.Event(enable_timing=True)
    live.record()
    for call in (
        lambda: _C._event_query(h),
        lambda: _C._event_synchronize(h),
        lambda: _C._event_record(h, 0),
        lambda: _C._event_destroy(h),
        lambda: _C._event_elapsed_time(h, live.handle),
        lambda: _C._event_elapsed_time(live.handle, h),
        lambda: _C._stream_wait_event(0, h),
    ):
        with raises("orErrorInvalidResourceHandle") as info:
            call()
        assert f"{h:#x}" in str(info.value)


@pytest.mark.parametrize("handle", [0, 7, 2**64 - 1])
def test_bogus_event_handles(handle):
    with raises("orErrorInvalidResourceHandle"):
        _C._event_query(handle)


def test_invalid_flags():
    with raises("orErrorInvalidValue"):
        _C._event_create_with_flags(0x4)
    # Both documented flags together are fine.
    _C._event_destroy(_C._event_create_with_flags(0x3))


def test_record_on_destroyed_stream():
    s = rt.Stream()
    h = s.handle
    s.destroy()
    with raises("orErrorInvalidResourceHandle"):
        _C._event_record(rt.Event().handle, h)


@requires_two_devices
def test_record_on_stream_of_other_device():
    e = rt.Event()
    rt.set_device(1)
    s = rt.Stream()
    with raises("orErrorInvalidValue") as info:
        e.record(s)
    assert "device 0" in str(info.value) and "device 1" in str(info.value)


def test_pending_stamp_of_destroyed_event_does_not_leak_into_reuse():
    s = rt.Stream()
    gate = threading.Event()
    s.launch_host_func(gate.wait)
    e = rt.Event(enable_timing=True)
    e.record(s)  # its stamp is queued behind the gate
    e.destroy()
    fresh = [rt.Event(enable_timing=True) for _ in range(4)]  # may reuse the slot
    gate.set()
    s.synchronize()
    for f in fresh:
        assert f.query()
        with raises("orErrorInvalidResourceHandle"):  # still never recorded
            f.elapsed_time(f)
