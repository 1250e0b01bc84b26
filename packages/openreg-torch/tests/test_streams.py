"""Streams: the torch.openreg / torch.Stream API, stream order, asynchronous copies,
record_stream and concurrent issue from many threads.

Tests that must show work still pending hold a stream with `_hold`: a host function at the
head of the stream that waits for the block to end. While it holds, everything queued
behind it provably has not run, so no assertion depends on timing. Only asynchronous work
(pinned non_blocking copies, event records, waits) may be issued on a held stream: a kernel
or a blocking copy would wait for it.
"""

import threading

import pytest
import torch

from openreg_torch.openreg.streams import _hold, _sleep

openreg = torch.openreg


def pinned(values):
    return torch.as_tensor(values, dtype=torch.float32).pin_memory()


# ------------------------------------------------------------------------------- the API

def test_stream_classes_mirror_torch_cuda():
    stream = openreg.Stream()
    assert isinstance(stream, torch.Stream)
    assert stream.device == torch.device("openreg", 0)
    assert openreg.Stream(device=1).device == torch.device("openreg", 1)
    assert openreg.Stream(device="openreg:1").device_index == 1
    assert torch.get_device_module("openreg").Stream is openreg.Stream
    assert repr(stream).startswith("<torch.openreg.Stream device=openreg:0 openreg_stream=0x")
    assert stream.openreg_stream == stream.native_handle != 0


def test_priorities_are_clamped_to_the_range():
    least, greatest = openreg.Stream.priority_range()
    assert (least, greatest) == (0, -2)
    assert openreg.Stream().priority == 0
    assert openreg.Stream(priority=-1).priority == -1
    assert openreg.Stream(priority=-100).priority == greatest
    assert openreg.Stream(priority=100).priority == least
    assert openreg.default_stream().priority == 0


def test_current_and_default_stream():
    assert openreg.current_stream() == openreg.default_stream()
    assert openreg.current_stream(1) == openreg.default_stream(1)
    assert openreg.default_stream(0) != openreg.default_stream(1)
    assert openreg.current_stream() == torch.accelerator.current_stream()
    assert isinstance(openreg.current_stream(), openreg.Stream)


@pytest.mark.parametrize("stream_id, device_index, message", [
    (2, 0, "stream id 2 names no stream of device 0"),  # not a pool id
    (-1, 0, "stream id -1 names no stream"),
    (1 | 3 << 1, 0, "names no stream"),  # priority level 3: the range has three levels
    (1 | 32 << 3, 0, "names no stream"),  # past the pool of 32
    (0, 5, "invalid device index 5"),
])
def test_a_stream_that_names_no_stream_is_rejected(stream_id, device_index, message):
    device_type = openreg.current_stream().device_type
    made_up = torch.Stream(stream_id=stream_id, device_index=device_index, device_type=device_type)
    with pytest.raises(RuntimeError, match=message):
        openreg.set_stream(made_up)
    assert openreg.current_stream() == openreg.default_stream()


def test_generic_torch_stream_works_with_openreg():
    stream = torch.Stream(device="openreg")
    assert stream.device_type == openreg.current_stream().device_type
    openreg.set_stream(stream)
    assert openreg.current_stream() == stream
    torch.accelerator.set_stream(openreg.default_stream())
    assert torch.accelerator.current_stream() == openreg.default_stream()


def test_new_streams_come_from_a_pool():
    # Like torch.cuda.Stream(): programs create streams in loops, so creation must not
    # exhaust anything; the pool hands its streams out round-robin.
    handles = {openreg.Stream().openreg_stream for _ in range(5000)}
    assert 1 < len(handles) <= 32
    assert openreg.default_stream().openreg_stream not in handles


def test_set_stream_makes_its_device_current():
    stream = openreg.Stream(device=1)
    openreg.set_stream(stream)
    assert openreg.current_device() == 1
    assert openreg.current_stream() == stream
    assert openreg.current_stream(0) == openreg.default_stream(0)
    openreg.set_stream(None)  # a no-op, as in torch.cuda
    assert openreg.current_stream() == stream


def test_current_stream_is_per_thread():
    stream = openreg.Stream()
    seen = {}

    def worker():
        seen["before"] = openreg.current_stream()
        openreg.set_stream(stream)
        seen["after"] = openreg.current_stream()

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen["before"] == openreg.default_stream()
    assert seen["after"] == stream
    assert openreg.current_stream() == openreg.default_stream()


# ---------------------------------------------------------------- context managers

def test_stream_context_restores_the_stream_on_exception():
    stream = openreg.Stream()
    with pytest.raises(ValueError):
        with openreg.stream(stream) as entered:
            assert entered is stream
            assert openreg.current_stream() == stream
            assert torch.ones(2, device="openreg").add(1).sum().item() == 4
            raise ValueError
    assert openreg.current_stream() == openreg.default_stream()


def test_stream_context_on_another_device_restores_both_devices():
    before = openreg.Stream(device=1)
    openreg.set_stream(before)
    openreg.set_device(0)
    stream = openreg.Stream(device=1)
    with pytest.raises(ValueError):
        with openreg.stream(stream):
            assert openreg.current_device() == 1
            assert openreg.current_stream(1) == stream
            assert openreg.current_stream(0) == openreg.default_stream(0)
            raise ValueError
    assert openreg.current_device() == 0
    assert openreg.current_stream(1) == before
    assert openreg.current_stream(0) == openreg.default_stream(0)


def test_nested_stream_contexts():
    outer, inner = openreg.Stream(), openreg.Stream(priority=-1)
    with openreg.stream(outer):
        with openreg.stream(inner):
            assert openreg.current_stream() == inner
        assert openreg.current_stream() == outer
        with openreg.stream(None):  # a no-op
            assert openreg.current_stream() == outer
    assert openreg.current_stream() == openreg.default_stream()


def test_torch_stream_as_context_manager_restores_on_exception():
    stream = openreg.Stream(device=1)
    with pytest.raises(ValueError):
        with stream:
            assert openreg.current_device() == 1
            assert openreg.current_stream(1) == stream
            raise ValueError
    assert openreg.current_device() == 0
    assert openreg.current_stream(1) == openreg.default_stream(1)


def test_device_context_restores_device_and_streams_on_exception():
    stream = openreg.Stream(device=0)
    openreg.set_stream(stream)
    with pytest.raises(ValueError):
        with openreg.device(1):
            assert openreg.current_device() == 1
            assert openreg.current_stream() == openreg.default_stream(1)
            raise ValueError
    assert openreg.current_device() == 0
    assert openreg.current_stream() == stream


# ------------------------------------------------------------------------ stream order

def test_query_and_synchronize_follow_held_work():
    stream = openreg.Stream()
    with _hold(stream):
        event = stream.record_event()
        assert not stream.query()
        assert not event.query()
    stream.synchronize()
    assert stream.query() and event.query()


def test_long_copy_then_dependent_ops_on_one_stream():
    # A big pinned copy is still running when the kernels reading its destination are
    # issued; stream order makes them wait for it.
    host = torch.empty(32 * 2**20).fill_(3).pin_memory()
    device = torch.zeros(host.shape, device="openreg")
    stream = openreg.Stream()
    with openreg.stream(stream):
        _sleep(50)
        device.copy_(host, non_blocking=True)
        doubled = device * 2
        result = torch.stack([doubled.min(), doubled.max()]).cpu()
    assert result.tolist() == [6.0, 6.0]


# DOC START: stale-copy
def test_copy_to_pinned_host_is_stale_until_synchronized():
    # The classic mistake: reading a non_blocking copy's destination before syncing.
    source = torch.full((1000,), 7.0, device="openreg")
    out = torch.zeros(1000).pin_memory()
    with _hold():
        out.copy_(source, non_blocking=True)
        assert out.sum().item() == 0  # the copy has provably not run: stale data
        assert not openreg.current_stream().query()
    openreg.current_stream().synchronize()
    assert out.sum().item() == 7000
# DOC END: stale-copy


def test_copy_from_pinned_host_reads_the_source_when_it_runs():
    host = pinned([1.0, 1.0, 1.0])
    device = torch.zeros(3, device="openreg")
    with _hold():
        device.copy_(host, non_blocking=True)
        host.fill_(2)  # not yet copied: the copy will see this
    assert device.cpu().tolist() == [2.0, 2.0, 2.0]


def test_non_blocking_copies_with_pageable_memory_are_synchronous():
    device = torch.full((4,), 5.0, device="openreg")
    stream = openreg.current_stream()
    _sleep(50)
    out = torch.zeros(4)  # pageable
    out.copy_(device, non_blocking=True)
    assert stream.query()  # it waited for the stream, the sleep included
    assert out.tolist() == [5.0] * 4
    host = torch.ones(4)
    _sleep(50)
    device.copy_(host, non_blocking=True)
    assert stream.query()
    host.fill_(9)  # too late: the copy is done
    assert device.cpu().tolist() == [1.0] * 4


# DOC START: unordered-streams
def test_other_stream_sees_stale_data_without_a_wait():
    data = torch.zeros(4, device="openreg")
    writer, reader = openreg.Stream(), openreg.Stream()
    with openreg.stream(writer), _hold(writer):
        data.copy_(pinned([5.0] * 4), non_blocking=True)
        with openreg.stream(reader):
            unordered = (data + 1).cpu()  # reader is idle: runs now, before the copy
    assert unordered.tolist() == [1.0] * 4
    writer.synchronize()
    assert (data + 1).cpu().tolist() == [6.0] * 4
# DOC END: unordered-streams


# DOC START: ordered-streams
@pytest.mark.parametrize("how", ["wait_stream", "wait_event", "event.wait", "torch.Event"])
def test_waits_order_work_across_streams(how):
    data = torch.zeros(4, device="openreg")
    out = torch.zeros(4).pin_memory()
    writer, reader = openreg.Stream(), openreg.Stream()
    with openreg.stream(writer), _hold(writer):
        data.copy_(pinned([5.0] * 4), non_blocking=True)
        if how == "wait_stream":
            reader.wait_stream(writer)
        elif how == "wait_event":
            reader.wait_event(writer.record_event())
        elif how == "event.wait":
            event = openreg.Event()
            event.record()  # on the current stream: writer
            event.wait(reader)
        else:
            event = torch.Event(device="openreg")
            event.record(writer)
            reader.wait_event(event)
        with openreg.stream(reader):
            out.copy_(data, non_blocking=True)
        assert not reader.query()
        assert out.tolist() == [0.0] * 4
    reader.synchronize()
    assert out.tolist() == [5.0] * 4
    with openreg.stream(reader):
        assert (data + 1).cpu().tolist() == [6.0] * 4
# DOC END: ordered-streams


def test_a_stream_can_wait_for_another_device():
    stream0, stream1 = openreg.Stream(device=0), openreg.Stream(device=1)
    with _hold(stream0):
        stream1.wait_event(stream0.record_event())
        after = stream1.record_event()
        assert not after.query()
    after.synchronize()
    assert stream0.query()


def test_device_and_accelerator_synchronize_wait_for_every_stream():
    streams = [openreg.Stream(), openreg.Stream(priority=-2)]
    for stream in streams:
        with openreg.stream(stream):
            _sleep(30)
    openreg.synchronize()
    assert all(stream.query() for stream in streams)
    with openreg.stream(streams[0]):
        _sleep(30)
    torch.accelerator.synchronize()
    assert streams[0].query()


def test_synchronize_releases_the_gil():
    # One thread waits on a held stream while another opens it.
    stream = openreg.Stream()
    finished = threading.Event()

    def waiter():
        stream.synchronize()
        finished.set()

    with _hold(stream):
        thread = threading.Thread(target=waiter)
        thread.start()
        assert not finished.wait(0.05)
    thread.join(timeout=60)
    assert finished.is_set()


# ----------------------------------------------------------------------- record_stream

SIZE = 12347  # element counts no other test uses: their size classes start empty
OTHER_SIZE = 23459


# DOC START: record-stream
def test_record_stream_keeps_memory_until_the_other_stream_is_done():
    side = openreg.Stream()
    tensor = torch.full((SIZE,), 3.0, device="openreg")
    out = torch.zeros(SIZE).pin_memory()
    with _hold(side):
        with openreg.stream(side):
            out.copy_(tensor, non_blocking=True)  # reads `tensor` later, on `side`
        tensor.record_stream(side)
        address = tensor.data_ptr()
        del tensor
        reused = torch.empty(SIZE, device="openreg")  # on the default stream
        assert reused.data_ptr() != address
        reused.fill_(-1)
    side.synchronize()
    assert out.sum().item() == 3.0 * SIZE  # what `tensor` held, not -1
    del reused
    later = torch.empty(SIZE + 1, device="openreg")  # same size class, after the work
    assert later.data_ptr() == address
# DOC END: record-stream


def test_without_record_stream_freed_memory_is_reused_at_once():
    # Why record_stream exists: the allocator only knows the allocation stream.
    tensor = torch.empty(OTHER_SIZE, device="openreg")
    address = tensor.data_ptr()
    del tensor
    assert torch.empty(OTHER_SIZE, device="openreg").data_ptr() == address


def test_memory_freed_while_its_stream_is_busy_is_reused_in_stream_order():
    # What the host issues next on the stream runs after the queued work, so the block can
    # serve the host's next allocation at once (a loop of non_blocking copies whose results
    # are dropped reserved a segment per call); the queued read still sees the old values.
    size = SIZE + 4 * 1024  # another size class than the record_stream tests'
    tensor = torch.full((size,), 3.0, device="openreg")
    out = torch.zeros(size).pin_memory()
    source = torch.full((size,), -1.0).pin_memory()
    reserved = openreg.memory_reserved()
    with _hold():
        out.copy_(tensor, non_blocking=True)  # queued: reads `tensor`
        address = tensor.data_ptr()
        del tensor
        reused = torch.empty(size, device="openreg")
        assert reused.data_ptr() == address
        reused.copy_(source, non_blocking=True)  # queued after the read
        assert openreg.memory_reserved() == reserved
    openreg.synchronize()
    assert out.sum().item() == 3.0 * size
    assert reused.sum().item() == -1.0 * size


def test_pinned_source_of_a_pending_copy_is_not_reused():
    # The pinned host allocator is stream-aware too: a freed pinned block that a pending
    # copy still reads is not handed out again before that copy has run.
    device = torch.zeros(OTHER_SIZE, device="openreg")
    with _hold():
        source = torch.full((OTHER_SIZE,), 5.0).pin_memory()
        address = source.data_ptr()
        device.copy_(source, non_blocking=True)
        del source
        other = torch.empty(OTHER_SIZE).pin_memory()
        assert other.data_ptr() != address
        other.fill_(-1)
    assert device.sum().item() == 5.0 * OTHER_SIZE


# --------------------------------------------------------------------------- threads

def test_many_threads_issue_on_their_own_streams():
    threads_count, steps = 8, 20
    barrier = threading.Barrier(threads_count)
    errors = []

    def worker(rank):
        try:
            stream = openreg.Stream(device=rank % 2)
            host = torch.arange(4096, dtype=torch.float32).pin_memory()
            out = torch.empty(4096).pin_memory()
            barrier.wait()
            with openreg.stream(stream):
                assert openreg.current_stream(stream.device_index) == stream
                device = torch.empty(4096, device=stream.device)
                for step in range(steps):
                    device.copy_(host, non_blocking=True)
                    device = device * rank + step
                    out.copy_(device, non_blocking=True)
                    stream.synchronize()
                    expected = torch.arange(4096, dtype=torch.float32) * rank + step
                    assert torch.equal(out, expected), (rank, step)
            assert openreg.current_stream(stream.device_index) == \
                openreg.default_stream(stream.device_index)
        except BaseException as error:  # reported by the main thread
            errors.append((rank, error))

    threads = [threading.Thread(target=worker, args=(rank,)) for rank in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []
