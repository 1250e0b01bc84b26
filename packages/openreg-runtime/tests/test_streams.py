"""Streams: handles, ordering, host functions, kernels."""

import ctypes
import sys
import threading
import time

import pytest

import openreg_runtime as rt
from openreg_runtime import _C
from runtime_helpers import raises, requires_two_devices, run_ok


def test_create_query_destroy():
    s = rt.Stream()
    assert s.query()
    assert s.device == 0 and s.priority == 0
    s.synchronize()
    s.destroy()


@pytest.mark.parametrize("asked,got", [(0, 0), (-1, -1), (-2, -2), (-5, -2), (3, 0)])
def test_priority_is_clamped(asked, got):
    assert rt.Stream(priority=asked).priority == got


@requires_two_devices
def test_stream_belongs_to_current_device():
    rt.set_device(1)
    s = rt.Stream()
    rt.set_device(0)
    assert s.device == 1
    assert rt.Stream.default().device == 0  # handle 0 follows the current device


def test_flags_must_be_zero():
    with raises("orErrorInvalidValue"):
        _C._stream_create_with_priority(1, 0)


def test_destroyed_handle_is_rejected():
    s = rt.Stream()
    h = s.handle
    s.destroy()
    calls = [
        lambda: _C._stream_query(h),
        lambda: _C._stream_synchronize(h),
        lambda: _C._stream_get_priority(h),
        lambda: _C._stream_get_device(h),
        lambda: _C._stream_destroy(h),
        lambda: _C._launch_host_func(h, lambda: None),
        lambda: _C._launch_kernel(h, lambda: None),
        lambda: _C._memset_async(rt.malloc(0), 0, 0, h),
        lambda: _C._stream_wait_event(h, rt.Event().handle),
    ]
    for call in calls:
        with raises("orErrorInvalidResourceHandle") as info:
            call()
        assert f"{h:#x}" in str(info.value)


def test_recycled_slot_does_not_revive_old_handle():
    s = rt.Stream()
    old = s.handle
    s.destroy()
    fresh = [rt.Stream() for _ in range(4)]  # one of them reuses the slot
    assert old not in {f.handle for f in fresh}
    with raises("orErrorInvalidResourceHandle"):
        _C._stream_query(old)


@pytest.mark.parametrize("bogus", [1, 12345, 0xDEAD00000001, 2**64 - 1])
def test_bogus_handles(bogus):
    with raises("orErrorInvalidResourceHandle"):
        _C._stream_query(bogus)


def test_default_stream_cannot_be_destroyed():
    with raises("orErrorInvalidResourceHandle"):
        _C._stream_destroy(0)


def test_destroy_completes_pending_work():
    s = rt.Stream()
    log = []
    s.launch_host_func(lambda: (time.sleep(0.1), log.append("done")))
    s.destroy()
    assert log == ["done"]


def test_query_reflects_pending_work():
    s = rt.Stream()
    gate = threading.Event()
    s.launch_host_func(gate.wait)
    assert not s.query()
    gate.set()
    s.synchronize()
    assert s.query()


def test_host_funcs_run_in_order_on_the_worker():
    s = rt.Stream()
    log, threads = [], set()
    for i in range(200):
        s.launch_host_func(lambda i=i: (log.append(i), threads.add(threading.get_ident())))
    s.synchronize()
    assert log == list(range(200))
    assert threads and threading.get_ident() not in threads


def test_concurrent_submission_keeps_issue_order():
    """Several Python threads issue interleaved work; execution must follow
    the global issue order (recorded under a lock) and each thread's order."""
    s = rt.Stream()
    p = rt.malloc(8 * 64)
    k = rt.kernel_pointer(p)
    issued, executed = [], []
    lock = threading.Lock()

    def submit(tid):
        for i in range(150):
            with lock:
                tag = (tid, i)
                issued.append(tag)
                if i % 3 == 0:
                    # A fill followed by a check of it: the check must see the fill.
                    rt.memset_async(p + tid * 64, i % 256, 64, s)
                    s.launch_host_func(
                        lambda tag=tag, v=i % 256: executed.append(
                            tag if ctypes.string_at(k + tag[0] * 64, 64) == bytes([v]) * 64 else ("bad", tag)
                        )
                    )
                elif i % 3 == 1:
                    s.launch_kernel(lambda tag=tag: executed.append(tag))
                else:
                    s.launch_host_func(lambda tag=tag: executed.append(tag))

    workers = [threading.Thread(target=submit, args=(t,)) for t in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    s.synchronize()
    rt.free(p)
    assert executed == issued


def test_unlocked_concurrent_submission_keeps_per_thread_order():
    s = rt.Stream()
    executed = []

    def submit(tid):
        for i in range(300):
            if i % 2:
                s.launch_host_func(lambda i=i: executed.append((tid, i)))
            else:
                s.launch_kernel(lambda i=i: executed.append((tid, i)))

    workers = [threading.Thread(target=submit, args=(t,)) for t in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    s.synchronize()
    assert len(executed) == 1200
    for tid in range(4):
        assert [i for t, i in executed if t == tid] == list(range(300))


def test_unlocked_idle_launches_race_queued_work_and_waiters():
    # Kernels on an idle stream take and complete their tickets without the stream's
    # lock. Two threads launch that way without the GIL while this one queues work
    # behind them, waits for it and records events: a lost wakeup would leave a launch
    # asleep (the join timeout below) or this thread's wait (conftest's per-test
    # faulthandler deadline ends the run with a traceback), a ticket taken twice would
    # break the host funcs' order.
    s = rt.Stream()
    launches = []

    def launch():
        launches.append(_C._bench_launch_kernel(s.handle, 200_000) > 0)

    launchers = [threading.Thread(target=launch, daemon=True) for _ in range(2)]
    for thread in launchers:
        thread.start()
    ran = []
    rounds = 0
    while any(thread.is_alive() for thread in launchers) or rounds < 50:
        s.launch_host_func(lambda i=rounds: ran.append(i))
        event = rt.Event()
        event.record(s)
        if rounds % 2:
            s.synchronize()
        else:
            event.synchronize()
        assert ran[-1] == rounds
        rounds += 1
    for thread in launchers:
        thread.join(timeout=120)
        assert not thread.is_alive(), "a launch never returned"
    s.synchronize()
    assert launches == [True, True]
    assert ran == list(range(rounds)) and s.query()


def test_kernel_waits_for_queued_async_work():
    s = rt.Stream()
    p = rt.malloc(1 << 20)
    k = rt.kernel_pointer(p)
    h = rt.malloc_host(1 << 20)
    ctypes.memset(h, 0x77, 1 << 20)
    log = []
    gate, launching = threading.Event(), threading.Event()
    s.launch_host_func(lambda: (gate.wait(), log.append("gated host func")))
    rt.memcpy_async(p, h, 1 << 20, rt.MemcpyKind.HOST_TO_DEVICE, s)  # pinned: queued
    assert log == [] and not s.query()  # the gate is closed: provably pending
    # Another thread opens the gate once this one starts launching; it needs the GIL,
    # which launch_kernel gives up while it waits, so in practice the kernel is issued
    # while the host func still holds the stream (a kernel that did not wait would see
    # neither the log nor the bytes). Either way it must run after both.
    opener = threading.Thread(target=lambda: (launching.wait(), gate.set()))
    opener.start()
    seen = []
    launching.set()
    s.launch_kernel(lambda: seen.append((list(log), ctypes.string_at(k + (1 << 20) - 4, 4))))
    opener.join()
    assert seen == [(["gated host func"], b"\x77" * 4)]
    assert s.query()  # the kernel was the last work
    rt.free(p)
    rt.free_host(h)


def test_later_work_waits_for_running_kernel():
    s = rt.Stream()
    log = []

    def kernel():
        # Issued while the kernel runs, so it must start after it ends.
        s.launch_host_func(lambda: log.append("host func"))
        time.sleep(0.1)
        log.append("kernel end")

    s.launch_kernel(kernel)
    s.synchronize()
    assert log == ["kernel end", "host func"]


def test_kernel_runs_on_calling_thread_and_propagates_errors():
    s = rt.Stream()
    where = []
    s.launch_kernel(lambda: where.append(threading.get_ident()))
    assert where == [threading.get_ident()]
    with pytest.raises(ZeroDivisionError):
        s.launch_kernel(lambda: 1 / 0)
    assert s.query()
    s.launch_kernel(lambda: where.append(1))  # still usable
    assert where[-1] == 1


def test_host_func_exception_is_reported_not_lost():
    s = rt.Stream()
    caught = []
    old_hook = sys.unraisablehook
    sys.unraisablehook = lambda info: caught.append(info.exc_type)
    try:
        s.launch_host_func(lambda: 1 / 0)
        s.synchronize()
    finally:
        sys.unraisablehook = old_hook
    assert caught == [ZeroDivisionError]


def test_nested_work_on_own_stream_does_not_deadlock():
    # Sync calls issued from work already running on the default stream run
    # at once (they would otherwise wait for themselves). Subprocess: a
    # deadlock must fail the test, not hang the suite.
    out = run_ok(
        """
        import threading
        import openreg_runtime as r
        p = r.malloc(64)
        s = r.Stream.default()
        log = []
        s.launch_kernel(lambda: (s.launch_kernel(lambda: log.append("inner")), r.memset(p, 1, 64), log.append("outer")))
        s.launch_host_func(lambda: (r.memset(p, 2, 64), s.synchronize(), log.append("host")))
        r.synchronize()
        print(log, r.copy_from_device(p, 2))
        """
    )
    assert out.strip() == "['inner', 'outer', 'host'] b'\\x02\\x02'"


def test_stream_cannot_destroy_itself():
    s = rt.Stream()
    errors = []

    def destroy_self():
        try:
            _C._stream_destroy(s.handle)
        except rt.OpenRegError as e:
            errors.append(e.name)

    s.launch_host_func(destroy_self)
    s.synchronize()
    assert errors == ["orErrorNotSupported"]


def test_wait_event_orders_streams():
    a, b = rt.Stream(), rt.Stream()
    log = []
    gate = threading.Event()
    a.launch_host_func(lambda: (gate.wait(), log.append("a")))
    e = rt.Event()
    e.record(a)
    b.wait_event(e)
    b.launch_host_func(lambda: log.append("b"))
    assert not b.query()  # b waits for a, which waits for the gate
    gate.set()
    b.synchronize()
    assert log == ["a", "b"]


def test_wait_stream_and_same_stream_event():
    a, b = rt.Stream(), rt.Stream()
    log = []
    a.launch_host_func(lambda: (time.sleep(0.1), log.append("a")))
    b.wait_stream(a)
    b.launch_kernel(lambda: log.append("b kernel"))
    assert log == ["a", "b kernel"]
    e = a.record_event()
    a.wait_event(e)  # waiting on itself is implied by stream order
    a.synchronize()
    b.wait_event(rt.Event())  # never recorded: no wait
    assert b.query()


def test_wait_event_flags_must_be_zero():
    with raises("orErrorInvalidValue"):
        _C._stream_wait_event(0, rt.Event().handle, 1)


def test_async_copy_with_pinned_memory_is_asynchronous():
    s = rt.Stream()
    n = 1 << 16
    p = rt.malloc(n)
    rt.memset(p, 0x42, n)
    h = rt.malloc_host(n)
    gate = threading.Event()
    s.launch_host_func(gate.wait)
    rt.memcpy_async(h, p, n, rt.MemcpyKind.DEVICE_TO_HOST, s)  # returns at once
    assert ctypes.string_at(h, 4) == b"\0" * 4
    gate.set()
    s.synchronize()
    assert ctypes.string_at(h, n) == b"\x42" * n
    rt.free(p)
    rt.free_host(h)


def test_small_async_copy_and_fill_on_an_idle_stream_are_done_on_return():
    # Up to 1 MiB on an idle stream, like a kernel: no hand-off to the worker, so the
    # stream has nothing pending when the call returns. (On a busy stream they queue:
    # test_async_copy_with_pinned_memory_is_asynchronous.)
    s = rt.Stream()
    n = 1 << 20
    p = rt.malloc(n)
    h = rt.malloc_host(n)
    ctypes.memset(h, 0x17, n)
    rt.memcpy_async(p, h, n, rt.MemcpyKind.HOST_TO_DEVICE, s)
    assert s.query()
    rt.memset_async(p, 0x29, 16, s)
    assert s.query()
    rt.memcpy_async(h, p, n, rt.MemcpyKind.DEVICE_TO_HOST, s)
    assert s.query()
    assert ctypes.string_at(h, n) == b"\x29" * 16 + b"\x17" * (n - 16)
    rt.free(p)
    rt.free_host(h)


def test_async_copy_with_pageable_memory_waits_in_stream_order():
    s = rt.Stream()
    p = rt.malloc(64)
    rt.memset(p, 0x24, 64)
    buf = ctypes.create_string_buffer(64)
    s.launch_host_func(lambda: (time.sleep(0.1), rt.memset(p, 0x25, 64)))
    rt.memcpy_async(ctypes.addressof(buf), p, 64, rt.MemcpyKind.DEVICE_TO_HOST, s)
    # Returned only after the copy, which ran after the host function.
    assert buf.raw == b"\x25" * 64
    rt.free(p)


def test_launch_kernel_on_an_idle_stream_is_an_inline_call():
    # Why the per-op overhead PyTorch pays is small: on an idle stream, the default one
    # included, a kernel is a plain call on the launching thread, finished when the launch
    # returns, with no hand-off to the stream's worker. (Its cost in ns is measured by
    # bench/bench_runtime.py, not asserted here: a time limit would fail on a loaded machine.)
    s = rt.Stream()
    for stream in (rt.Stream.default(), s):
        assert stream.query()
        ran = []
        stream.launch_kernel(lambda: ran.append(threading.get_ident()))
        assert ran == [threading.get_ident()]
        assert stream.query()
        assert _C._bench_launch_kernel(stream.handle, 1000) > 0  # the benchmark's call works


def test_plain_create_calls():
    # orStreamCreate / orEventCreate without flags: priority 0, timing on.
    h = _C._stream_create()
    e1, e2 = _C._event_create(), _C._event_create()
    try:
        assert _C._stream_get_priority(h) == 0
        _C._event_record(e1, h)
        _C._event_record(e2, h)
        _C._event_synchronize(e2)
        assert _C._event_elapsed_time(e1, e2) >= 0
    finally:
        _C._event_destroy(e1)
        _C._event_destroy(e2)
        _C._stream_destroy(h)
