"""Interprocess sharing: memory and events opened by another process.

The test process exports; fresh interpreters (`Peer`) import, talking to it
line by line over their stdin/stdout, every read bounded by a timeout."""

import os
import textwrap
import time

import pytest

import openreg_runtime as rt
from runtime_helpers import Peer, raises, requires_two_devices

PRELUDE = """
import sys
import openreg_runtime as rt

def send(*values):
    print(*values, flush=True)

def recv():
    return sys.stdin.readline().strip()

def expect_error(name, fn):
    try:
        fn()
    except rt.OpenRegError as e:
        assert e.name == name, str(e)
        return str(e)
    raise AssertionError(f"expected {name}")
"""


def peer(body: str) -> Peer:
    return Peer(PRELUDE + textwrap.dedent(body))


def _deadline(predicate, seconds=10.0):
    """Poll `predicate` until true or `seconds` pass (the exporter's server
    notices a closed connection asynchronously)."""
    end = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


# ------------------------------------------------------------------ memory


def test_write_in_one_process_read_in_the_other(device_buffer):
    ptr = device_buffer(4096)
    rt.copy_to_device(ptr, b"from the exporter")
    handle = rt.ipc_get_mem_handle(ptr)
    assert isinstance(handle, bytes) and len(handle) == rt.IPC_HANDLE_SIZE == 64
    with peer("""
        p = rt.ipc_open_mem_handle(bytes.fromhex(recv()))
        send(rt.copy_from_device(p, 17).decode())
        rt.copy_to_device(p + 1000, b"from the importer")
        rt.synchronize()
        send("written")
        assert recv() == "close"
        rt.ipc_close_mem_handle(p)
        send("closed")
    """) as child:
        child.send(handle.hex())
        assert child.recv() == "from the exporter"
        assert child.recv() == "written"
        assert rt.copy_from_device(ptr + 1000, 17) == b"from the importer"
        child.send("close")
        assert child.recv() == "closed"
        child.finish()


def test_imported_memory_is_device_memory_there(device_buffer):
    ptr = device_buffer(10_000)
    rt.memset(ptr, 7, 10_000)
    with peer("""
        p = rt.ipc_open_mem_handle(bytes.fromhex(recv()))
        a = rt.pointer_attributes(p + 123)
        send(int(a.type), a.device, a.base == p, a.size)
        send(rt.device_of_pointer(p + 9999), rt.device_pointer(rt.kernel_pointer(p + 5)) == p + 5)
        # Copies take imported memory like any device memory.
        mine = rt.malloc(10_000)
        rt.memcpy(mine, p, 10_000, rt.MemcpyKind.DEVICE_TO_DEVICE)
        send(rt.copy_from_device(mine, 10_000) == bytes([7]) * 10_000)
        expect_error("orErrorInvalidValue", lambda: rt.copy_from_device(p + 9000, 2000))
        send(expect_error("orErrorInvalidDevicePointer", lambda: rt.free(p)))
        rt.free(mine)
        rt.ipc_close_mem_handle(p)
        send(rt.device_of_pointer(p))
    """) as child:
        child.send(rt.ipc_get_mem_handle(ptr).hex())
        assert child.recv() == f"{int(rt.MemoryType.DEVICE)} 0 True 10000"
        assert child.recv() == "0 True"
        assert child.recv() == "True"
        assert "orIpcCloseMemHandle" in child.recv()
        assert child.recv() == "-1"  # unmapped once its last open is closed
        child.finish()


@requires_two_devices
def test_memory_arrives_on_the_same_device_index(device_buffer):
    ptr = device_buffer(512, device=1)
    rt.copy_to_device(ptr, b"device one")
    with peer("""
        p = rt.ipc_open_mem_handle(bytes.fromhex(recv()))
        send(rt.pointer_attributes(p).device, rt.copy_from_device(p, 10).decode())
    """) as child:
        child.send(rt.ipc_get_mem_handle(ptr).hex())
        assert child.recv() == "1 device one"
        child.finish()


def test_reference_counts_follow_opens_closes_and_death(device_buffer):
    ptr = device_buffer(4096)
    assert rt.ipc_mem_ref_count(ptr) == (0, 0)
    first, second = rt.ipc_get_mem_handle(ptr), rt.ipc_get_mem_handle(ptr)
    assert first != second  # each handle is counted until opened
    assert rt.ipc_mem_ref_count(ptr) == (0, 2)
    with peer("""
        p = rt.ipc_open_mem_handle(bytes.fromhex(recv()))
        q = rt.ipc_open_mem_handle(bytes.fromhex(recv()))
        send(p == q)  # two handles, one mapping, two opens
        recv()
        rt.ipc_close_mem_handle(p)
        send("one closed")
        recv()
        import os
        os._exit(0)  # dies without closing the other
    """) as child:
        child.send(first.hex())
        child.send(second.hex())
        assert child.recv() == "True"
        assert rt.ipc_mem_ref_count(ptr) == (2, 0)
        child.send("go")
        assert child.recv() == "one closed"
        assert rt.ipc_mem_ref_count(ptr) == (1, 0)
        child.send("die")
        child.finish()
    assert _deadline(lambda: rt.ipc_mem_ref_count(ptr) == (0, 0))


def test_discarded_handles_are_not_counted(device_buffer):
    ptr = device_buffer(512)
    handle = rt.ipc_get_mem_handle(ptr)
    assert rt.ipc_mem_ref_count(ptr) == (0, 1)
    rt.ipc_discard_mem_handle(handle)
    rt.ipc_discard_mem_handle(handle)  # a no-op the second time
    assert rt.ipc_mem_ref_count(ptr) == (0, 0)


def test_freed_while_open_elsewhere_stays_until_closed():
    size = 8 << 20
    free_before, _ = rt.mem_get_info()
    ptr = rt.malloc(size)
    rt.memset(ptr, 5, size)
    with peer("""
        p = rt.ipc_open_mem_handle(bytes.fromhex(recv()))
        send("open")
        assert recv() == "freed"
        send(rt.copy_from_device(p + (8 << 20) - 4, 4) == bytes([5]) * 4)
        rt.ipc_close_mem_handle(p)
        send("closed")
    """) as child:
        handle = rt.ipc_get_mem_handle(ptr)
        child.send(handle.hex())
        assert child.recv() == "open"
        rt.free(ptr)
        # Gone for this process (not live, cannot be freed or shared again)...
        with raises("orErrorInvalidDevicePointer"):
            rt.pointer_attributes(ptr)
        with raises("orErrorInvalidDevicePointer"):
            rt.free(ptr)
        with raises("orErrorInvalidDevicePointer"):
            rt.ipc_get_mem_handle(ptr)
        # ...but its pages still belong to the importer.
        assert rt.mem_get_info()[0] <= free_before - size
        child.send("freed")
        assert child.recv() == "True"
        assert child.recv() == "closed"
        child.finish()
    assert _deadline(lambda: rt.mem_get_info()[0] == free_before)


def test_reexport_hands_on_the_original_allocation(device_buffer):
    ptr = device_buffer(4096)
    rt.copy_to_device(ptr, b"original")
    relay = peer("""
        p = rt.ipc_open_mem_handle(bytes.fromhex(recv()))
        send(rt.ipc_get_mem_handle(p).hex())
        expect_error("orErrorInvalidDevicePointer", lambda: rt.ipc_get_mem_handle(p + 512))
        recv()
    """)
    last = peer("""
        p = rt.ipc_open_mem_handle(bytes.fromhex(recv()))
        send(rt.copy_from_device(p, 8).decode())
        recv()
    """)
    with relay, last:
        relay.send(rt.ipc_get_mem_handle(ptr).hex())
        last.send(relay.recv())
        assert last.recv() == "original"
        assert rt.ipc_mem_ref_count(ptr) == (2, 0)
        relay.send("done")
        last.send("done")
        relay.finish()
        last.finish()


# ------------------------------------------------------------- memory errors


def test_handle_of_this_process_is_refused(device_buffer):
    handle = rt.ipc_get_mem_handle(device_buffer(512))
    with raises("orErrorInvalidValue") as info:
        rt.ipc_open_mem_handle(handle)
    assert "this very process" in str(info.value)


def test_handle_of_a_dead_process():
    with peer("""
        p = rt.malloc(4096)
        send(rt.ipc_get_mem_handle(p).hex())
    """) as child:
        handle = bytes.fromhex(child.recv())
        child.finish()
    with raises("orErrorIpcExporterGone") as info:
        rt.ipc_open_mem_handle(handle)
    assert f"pid {int.from_bytes(handle[8:12], 'little')}) has exited" in str(info.value)


def test_handle_naming_an_unrelated_live_process(device_buffer):
    # Same pid as a real exporter (this process), another instance number: a
    # process whose id was reused by someone else.
    handle = bytearray(rt.ipc_get_mem_handle(device_buffer(512)))
    handle[16:24] = bytes(8)
    handle[16] = 1
    with peer("""
        send(expect_error("orErrorIpcExporterGone", lambda: rt.ipc_open_mem_handle(bytes.fromhex(recv()))))
    """) as child:
        child.send(bytes(handle).hex())
        assert f"process {os.getpid()} is not the process that exported" in child.recv()
        child.finish()


def test_handle_of_freed_memory_is_stale():
    ptr = rt.malloc(4096)
    handle = rt.ipc_get_mem_handle(ptr)
    rt.free(ptr)
    again = rt.malloc(4096)  # the same block, a new allocation
    try:
        with peer("""
            send(expect_error("orErrorIpcHandleStale", lambda: rt.ipc_open_mem_handle(bytes.fromhex(recv()))))
        """) as child:
            child.send(handle.hex())
            assert "freed the allocation" in child.recv()
            child.finish()
    finally:
        rt.free(again)


def test_handle_opened_twice_and_closed_twice(device_buffer):
    with peer("""
        h = bytes.fromhex(recv())
        p = rt.ipc_open_mem_handle(h)
        send(expect_error("orErrorAlreadyMapped", lambda: rt.ipc_open_mem_handle(h)))
        rt.ipc_close_mem_handle(p)
        send(expect_error("orErrorNotMapped", lambda: rt.ipc_close_mem_handle(p)))
        q = rt.ipc_open_mem_handle(h)  # closed: may be opened again
        expect_error("orErrorNotMapped", lambda: rt.ipc_close_mem_handle(q + 512))
        mine = rt.malloc(512)
        expect_error("orErrorNotMapped", lambda: rt.ipc_close_mem_handle(mine))
        expect_error("orErrorNotMapped", lambda: rt.ipc_close_mem_handle(0))
        rt.ipc_close_mem_handle(q)
        send("ok")
    """) as child:
        child.send(rt.ipc_get_mem_handle(device_buffer(4096)).hex())
        assert "already open in this process" in child.recv()
        assert "closed already" in child.recv()
        assert child.recv() == "ok"
        child.finish()


def test_bytes_that_are_not_a_handle(device_buffer):
    with raises("orErrorIpcInvalidHandle"):
        rt.ipc_open_mem_handle(bytes(64))
    with raises("orErrorIpcInvalidHandle"):
        rt.ipc_open_mem_handle(os.urandom(64))
    event_handle = rt.Event(interprocess=True).ipc_handle()
    with raises("orErrorIpcInvalidHandle") as info:
        rt.ipc_open_mem_handle(event_handle)
    assert "event handle, not a memory one" in str(info.value)
    with raises("orErrorIpcInvalidHandle"):
        rt.Event.from_ipc_handle(rt.ipc_get_mem_handle(device_buffer(512)))
    with pytest.raises(ValueError, match="64 bytes, got 3"):
        rt.ipc_open_mem_handle(b"abc")
    with raises("orErrorInvalidValue"):
        rt.ipc_discard_mem_handle(bytes(rt.ipc_get_mem_handle(device_buffer(512))[:8]) + bytes([1]) * 56)


def test_handles_need_device_memory_at_an_allocation_start(device_buffer):
    ptr = device_buffer(4096)
    with raises("orErrorInvalidDevicePointer") as info:
        rt.ipc_get_mem_handle(ptr + 512)
    assert "points 512 bytes into the allocation" in str(info.value)
    with raises("orErrorInvalidDevicePointer"):
        rt.ipc_get_mem_handle(12345)
    host = rt.malloc_host(4096)
    try:
        with raises("orErrorInvalidDevicePointer"):
            rt.ipc_get_mem_handle(host)
    finally:
        rt.free_host(host)
    with raises("orErrorInvalidDevicePointer"):
        rt.ipc_mem_ref_count(ptr + 512)


@requires_two_devices
def test_device_missing_in_the_importer(device_buffer):
    ptr = device_buffer(512, device=1)
    with Peer(PRELUDE + textwrap.dedent("""
        send(expect_error("orErrorInvalidDevice", lambda: rt.ipc_open_mem_handle(bytes.fromhex(recv()))))
    """), env={"OPENREG_DEVICE_COUNT": "1"}) as child:
        child.send(rt.ipc_get_mem_handle(ptr).hex())
        assert "device index 1 is out of range" in child.recv()
        child.finish()


def test_open_in_a_forked_child_fails_cleanly(device_buffer):
    ptr = device_buffer(512)
    handle = rt.ipc_get_mem_handle(ptr)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            rt.ipc_open_mem_handle(handle)
        except rt.OpenRegError as e:
            code = 0 if e.name == "orErrorForkedProcess" else 2
        else:
            code = 3
        os.write(write_fd, bytes([code]))
        os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as f:
        assert f.read() == bytes([0])
    os.waitpid(pid, 0)
    # The parent still serves its handles.
    with peer("""
        p = rt.ipc_open_mem_handle(bytes.fromhex(recv()))
        send(rt.pointer_attributes(p).size)
    """) as child:
        child.send(rt.ipc_get_mem_handle(ptr).hex())
        assert child.recv() == "512"
        child.finish()


# ------------------------------------------------------------------- events


def test_interprocess_event_orders_work_across_processes(device_buffer):
    import threading

    ptr = device_buffer(4096)
    s = rt.Stream()
    gate = threading.Event()
    s.launch_host_func(gate.wait)
    rt.memset_async(ptr, 9, 4096, stream=s)
    done = rt.Event(interprocess=True)
    done.record(s)
    assert not done.query()
    with peer("""
        p = rt.ipc_open_mem_handle(bytes.fromhex(recv()))
        e = rt.Event.from_ipc_handle(bytes.fromhex(recv()))
        send(e.query())
        s = rt.Stream()
        e.wait(s)  # the stream's later work waits for the exporter's record
        out = rt.malloc_host(4096)
        rt.memcpy_async(out, p, 4096, rt.MemcpyKind.DEVICE_TO_HOST, stream=s)
        send("queued", s.query())
        e.synchronize()
        s.synchronize()
        import ctypes
        send(ctypes.string_at(out, 4096) == bytes([9]) * 4096, e.query())
        # And the other way: the exporter waits for a record made here.
        rt.copy_to_device(p, b"reply")
        mine = rt.Event(interprocess=True)
        mine.record()
        send(mine.ipc_handle().hex())
        recv()
    """) as child:
        child.send(rt.ipc_get_mem_handle(ptr).hex())
        child.send(done.ipc_handle().hex())
        assert child.recv() == "False"
        assert child.recv() == "queued False"
        gate.set()
        assert child.recv() == "True True"
        theirs = rt.Event.from_ipc_handle(bytes.fromhex(child.recv()))
        theirs.synchronize()
        assert theirs.query()
        assert rt.copy_from_device(ptr, 5) == b"reply"
        theirs.destroy()
        child.send("bye")
        child.finish()


def test_interprocess_event_errors():
    with raises("orErrorInvalidValue") as info:
        rt.Event(enable_timing=True, interprocess=True)
    assert "requires orEventDisableTiming" in str(info.value)
    with raises("orErrorInvalidResourceHandle") as info:
        rt.Event().ipc_handle()
    assert "orEventInterprocess" in str(info.value)
    e = rt.Event(interprocess=True)
    with raises("orErrorInvalidValue"):
        rt.Event.from_ipc_handle(e.ipc_handle())  # this very process
    with raises("orErrorInvalidResourceHandle"):
        e.elapsed_time(e)  # no timing
    handle = e.ipc_handle()
    e.destroy()
    with peer("""
        send(expect_error("orErrorIpcHandleStale", lambda: rt.Event.from_ipc_handle(bytes.fromhex(recv()))))
    """) as child:
        child.send(handle.hex())
        assert "destroyed the interprocess event" in child.recv()
        child.finish()


def test_event_opened_by_another_process_survives_destroy_here():
    e = rt.Event(interprocess=True)
    with peer("""
        e = rt.Event.from_ipc_handle(bytes.fromhex(recv()))
        send("open")
        recv()
        e.record()
        e.synchronize()
        send(e.query())
    """) as child:
        child.send(e.ipc_handle().hex())
        assert child.recv() == "open"
        e.destroy()
        child.send("go")
        assert child.recv() == "True"
        child.finish()


def test_waiting_on_a_record_of_a_dead_process_ends():
    with peer("""
        import threading
        s = rt.Stream()
        s.launch_host_func(threading.Event().wait)  # never completes
        e = rt.Event(interprocess=True)
        e.record(s)
        send(e.ipc_handle().hex())
        recv()
        import os
        os._exit(0)
    """) as child:
        e = rt.Event.from_ipc_handle(bytes.fromhex(child.recv()))
        assert not e.query()
        s = rt.Stream()
        e.wait(s)
        child.send("die")
        child.finish()
        start = time.monotonic()
        with raises("orErrorIpcExporterGone") as info:
            e.synchronize()
        assert "exited before the recorded work completed" in str(info.value)
        s.synchronize()  # the stream's wait ends too
        assert time.monotonic() - start < 5
