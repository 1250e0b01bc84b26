"""Runtime errors reach Python as c10 errors carrying the runtime's message, and are
handled once: OPENREG_CHECK clears the runtime's per-thread last error (as C10_CUDA_CHECK
clears CUDA's), and a query's "not ready" is an answer, not an error left behind."""

import openreg_runtime
import pytest
import torch

from openreg_torch.openreg.streams import _hold

openreg = torch.openreg


def last_error() -> int:
    """The runtime's last error of this thread, without clearing it."""
    return openreg_runtime._C._peek_at_last_error()


def test_a_raised_runtime_error_is_cleared():
    start, untimed = openreg.Event(enable_timing=True), openreg.Event()
    start.record()
    untimed.record()
    untimed.synchronize()
    assert last_error() == 0
    # Raised as CUDAEvent raises it (ValueError), with the runtime's reason, and handled.
    with pytest.raises(ValueError, match="enable_timing=True.*orEventDisableTiming"):
        start.elapsed_time(untimed)
    assert last_error() == 0


def test_pending_work_is_an_answer_not_an_error():
    stream = openreg.Stream()
    with _hold(stream):
        event = stream.record_event()
        assert not stream.query()
        assert last_error() == 0
        assert not event.query()
        assert last_error() == 0
        start = openreg.Event(enable_timing=True)
        start.record(stream)
        with pytest.raises(RuntimeError, match="not completed"):
            start.elapsed_time(start)
        assert last_error() == 0
    stream.synchronize()
    assert stream.query() and event.query()


def test_out_of_memory_is_cleared():
    with pytest.raises(torch.OutOfMemoryError):
        torch.empty(2**50, dtype=torch.uint8, device="openreg")
    assert last_error() == 0
    with pytest.raises(torch.OutOfMemoryError):
        torch.empty(2**50, dtype=torch.uint8, pin_memory=True)
    assert last_error() == 0
