"""Events: torch.openreg.Event and the generic torch.Event on openreg streams.

Timing assertions are lower bounds only: a host function sleeping `ms` on a stream sits
between two records, so the measured time is at least `ms` however loaded the machine is.
"""

import pytest
import torch

from openreg_torch.openreg.streams import _hold, _sleep

openreg = torch.openreg


def test_event_classes_mirror_torch_cuda():
    event = openreg.Event()
    assert isinstance(event, torch.Event)
    assert repr(event) == "<torch.openreg.Event uninitialized>"
    assert event.query()  # never recorded: nothing to wait for
    event.synchronize()
    event.record()
    assert event.device == torch.device("openreg", 0)
    assert repr(event).startswith("<torch.openreg.Event 0x")
    assert openreg.Event(enable_timing=True, blocking=True) is not None
    # Shareable with other processes (see test_multiprocessing.py).
    assert isinstance(openreg.Event(interprocess=True), openreg.Event)


def test_record_captures_the_work_issued_so_far():
    stream = openreg.Stream()
    with _hold(stream):
        event = openreg.Event()
        event.record(stream)
        assert not event.query()
    event.synchronize()
    assert event.query()
    # Recording on the current stream, by default.
    with openreg.stream(stream):
        with _hold():
            event.record()
            assert not event.query()
    event.synchronize()
    assert event.query()


def test_record_event_returns_an_openreg_event():
    event = openreg.Stream().record_event()
    assert isinstance(event, openreg.Event)
    given = openreg.Event()
    assert openreg.current_stream().record_event(given) is given


def test_record_on_a_stream_of_another_device_is_rejected():
    event = openreg.Event()
    event.record(openreg.Stream(device=0))
    with pytest.raises(RuntimeError):
        event.record(openreg.Stream(device=1))


# DOC START: event-timing
def test_elapsed_time_measures_time_between_records():
    start, middle, end = (openreg.Event(enable_timing=True) for _ in range(3))
    start.record()
    _sleep(20)
    middle.record()
    _sleep(40)
    end.record()
    end.synchronize()
    first, second = start.elapsed_time(middle), middle.elapsed_time(end)
    assert first >= 20 and second >= 40
    # Microsecond resolution: the whole is the sum of its parts to within 2 us.
    assert start.elapsed_time(end) == pytest.approx(first + second, abs=0.002)
    assert start.elapsed_time(start) == 0
    assert end.elapsed_time(start) == pytest.approx(-(first + second), abs=0.002)
# DOC END: event-timing


def test_elapsed_time_across_streams():
    start, end = openreg.Event(enable_timing=True), openreg.Event(enable_timing=True)
    first, second = openreg.Stream(), openreg.Stream()
    start.record(first)
    with openreg.stream(second):
        second.wait_event(start)
        _sleep(30)
        end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 30


def test_elapsed_time_needs_completed_timed_recorded_events():
    start, end = openreg.Event(enable_timing=True), openreg.Event(enable_timing=True)
    # CUDAEvent's exception types: ValueError for events that cannot be timed,
    # RuntimeError for work still running.
    with pytest.raises(ValueError, match="must be recorded"):
        start.elapsed_time(end)
    start.record()
    with _hold():
        end.record()
        with pytest.raises(RuntimeError, match="must be completed.*not completed") as error:
            start.elapsed_time(end)
        assert not isinstance(error.value, ValueError)
    end.synchronize()
    assert start.elapsed_time(end) >= 0
    untimed = openreg.Event()
    untimed.record()
    with pytest.raises(ValueError, match="enable_timing=True.*DisableTiming"):
        start.elapsed_time(untimed)
    generic_untimed = torch.Event(device="openreg")
    generic_untimed.record()
    with pytest.raises(ValueError, match="enable_timing=True"):
        start.elapsed_time(generic_untimed)
    with pytest.raises(TypeError):
        start.elapsed_time(object())


def test_generic_torch_event_on_openreg():
    start = torch.Event(device="openreg", enable_timing=True)
    end = torch.Event(device="openreg", enable_timing=True)
    stream = torch.Stream(device="openreg")
    start.record(stream)
    with torch.openreg.stream(stream):
        _sleep(20)
    end.record(stream)
    end.synchronize()
    assert end.query()
    assert start.elapsed_time(end) >= 20
    # An openreg.Event measures against a generic one too.
    mine = openreg.Event(enable_timing=True)
    mine.record(stream)
    mine.synchronize()
    assert mine.elapsed_time(end) <= 0


def test_synchronize_waits_for_the_recorded_work():
    stream = openreg.Stream()
    with openreg.stream(stream):
        _sleep(30)
        event = openreg.Event()
        event.record()
    event.synchronize()
    assert event.query()
    assert stream.query()
