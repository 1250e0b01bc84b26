"""Allocation, pointer queries, the kernel view, copies and fills."""

import ctypes
import os

import pytest

import openreg_runtime as rt
from openreg_runtime import MemcpyKind as K, MemoryType
from runtime_helpers import raises, requires_two_devices, run_ok

PAGE = os.sysconf("SC_PAGESIZE")


def host_buffer(data: bytes):
    """A pageable host buffer and its address."""
    buf = ctypes.create_string_buffer(data, len(data))
    return buf, ctypes.addressof(buf)


# ---------------------------------------------------------------- allocation


def test_malloc_alignment_and_attributes(device_buffer):
    ptrs = [device_buffer(n) for n in (1, 100, 513, 4096)]
    assert len(set(ptrs)) == 4
    for p, n in zip(ptrs, (1, 100, 513, 4096)):
        assert p % 512 == 0
        a = rt.pointer_attributes(p)
        assert a.type == MemoryType.DEVICE and a.device == 0
        assert (a.base, a.size, a.device_pointer, a.host_pointer) == (p, n, p, 0)
    # Interior pointers resolve to their allocation.
    a = rt.pointer_attributes(ptrs[3] + 4000)
    assert (a.base, a.size) == (ptrs[3], 4096)


@requires_two_devices
def test_malloc_on_current_device(device_buffer):
    p = device_buffer(64, device=1)
    assert rt.pointer_attributes(p).device == 1
    assert rt.device_of_pointer(p) == 1


def test_malloc_zero_and_free_null():
    assert rt.malloc(0) == 0
    rt.free(0)
    assert rt.malloc_host(0) == 0
    rt.free_host(0)


@pytest.mark.parametrize("size", [(8 << 30) + 1, 2**63, 2**64 - 1])
def test_malloc_too_big(size):
    with raises("orErrorMemoryAllocation") as info:
        rt.malloc(size)
    assert f"tried to allocate {size} bytes" in str(info.value)
    assert "device 0" in str(info.value)


def test_double_and_interior_free():
    p = rt.malloc(4096)
    with raises("orErrorInvalidDevicePointer") as info:
        rt.free(p + 512)
    assert "points 512 bytes into the allocation" in str(info.value)
    rt.free(p)
    with raises("orErrorInvalidDevicePointer") as info:
        rt.free(p)
    assert "not a live allocation" in str(info.value)


def test_free_host_memory_as_device():
    buf, addr = host_buffer(b"x" * 16)
    with raises("orErrorInvalidDevicePointer"):
        rt.free(addr)
    h = rt.malloc_host(64)
    try:
        with raises("orErrorInvalidDevicePointer") as info:
            rt.free(h)
        assert "orFreeHost" in str(info.value)
    finally:
        rt.free_host(h)


def test_pinned_host_memory():
    h = rt.malloc_host(10000)
    assert h % PAGE == 0
    a = rt.pointer_attributes(h + 10)
    assert a.type == MemoryType.HOST and a.device == -1
    assert (a.base, a.size, a.host_pointer, a.device_pointer) == (h, 10000, h + 10, 0)
    ctypes.memset(h, 7, 10000)  # ordinary, host-accessible memory
    rt.free_host(h)
    with raises("orErrorInvalidValue"):
        rt.free_host(h)


def test_free_host_unknown_pointer(device_buffer):
    buf, addr = host_buffer(b"abc")
    with raises("orErrorInvalidValue"):
        rt.free_host(addr)
    with raises("orErrorInvalidValue"):
        rt.free_host(device_buffer(16))


def test_unregistered_and_freed_pointers():
    buf, addr = host_buffer(b"abc")
    a = rt.pointer_attributes(addr)
    assert a.type == MemoryType.UNREGISTERED and a.device == -1 and a.base == 0
    p = rt.malloc(512)
    rt.free(p)
    with raises("orErrorInvalidDevicePointer"):
        rt.pointer_attributes(p)


# ---------------------------------------------------------------- kernel view


def test_kernel_view_translation(device_buffer):
    p = device_buffer(8192)
    k = rt.kernel_pointer(p)
    assert k != p
    assert rt.kernel_pointer(p + 1234) == k + 1234
    assert rt.device_pointer(k + 1234) == p + 1234
    assert rt.device_of_pointer(p) == 0 and rt.device_of_pointer(k) == -1
    assert rt._C._device_of_kernel_pointer(k) == 0
    assert rt._C._device_of_kernel_pointer(p) == -1
    # The kernel view is the same memory, readable and writable by the host.
    rt.copy_to_device(p, b"device bytes")
    assert ctypes.string_at(k, 12) == b"device bytes"
    ctypes.memmove(k + 100, b"kernel wrote", 12)
    assert rt.copy_from_device(p + 100, 12) == b"kernel wrote"


def test_device_memory_views_translate_as_the_runtime_does(device_buffer):
    p = device_buffer(8192)
    view, kernel, size = rt._C._device_memory_views(0)
    assert view <= p < view + size and size > 0
    for address in (p, p + 4097, view, view + size - 1):
        assert kernel + (address - view) == rt.kernel_pointer(address)
    with raises("orErrorInvalidDevice"):
        rt._C._device_memory_views(-1)
    with raises("orErrorInvalidDevice"):
        rt._C._device_memory_views(64)


@requires_two_devices
def test_device_memory_views_are_empty_before_a_device_has_memory():
    out = run_ok("""
        import openreg_runtime as rt
        print(rt._C._device_memory_views(1))
        rt.set_device(1)
        p = rt.malloc(64)
        view, kernel, size = rt._C._device_memory_views(1)
        print(view <= p < view + size)
    """)
    assert out.split() == ["(0,", "0,", "0)", "True"]


def test_kernel_view_rejects_host_pointers():
    buf, addr = host_buffer(b"abc")
    with raises("orErrorInvalidDevicePointer"):
        rt.kernel_pointer(addr)
    with raises("orErrorInvalidDevicePointer"):
        rt.device_pointer(addr)
    assert rt.device_of_pointer(addr) == -1


# ---------------------------------------------------------------- copies


def test_copy_all_directions(device_buffer):
    data = bytes(range(256)) * 40
    n = len(data)
    a, b = device_buffer(n), device_buffer(n)
    src, src_addr = host_buffer(data)
    dst, dst_addr = host_buffer(b"\0" * n)
    rt.memcpy(a, src_addr, n, K.HOST_TO_DEVICE)
    rt.memcpy(b, a, n, K.DEVICE_TO_DEVICE)
    rt.memcpy(dst_addr, b, n, K.DEVICE_TO_HOST)
    assert dst.raw == data
    dst2, dst2_addr = host_buffer(b"\0" * n)
    rt.memcpy(dst2_addr, dst_addr, n, K.HOST_TO_HOST)
    assert dst2.raw == data


def test_copy_default_infers_kind(device_buffer):
    p = device_buffer(64)
    h = rt.malloc_host(64)
    try:
        ctypes.memmove(h, b"pinned!" * 9, 63)
        rt.memcpy(p, h, 63)  # pinned -> device
        q = device_buffer(64)
        rt.memcpy(q, p, 63)  # device -> device
        assert rt.copy_from_device(q, 63) == b"pinned!" * 9
    finally:
        rt.free_host(h)


@requires_two_devices
def test_copy_between_devices(device_buffer):
    a = device_buffer(4096, device=0)
    b = device_buffer(4096, device=1)
    rt.copy_to_device(a, b"\x5a" * 4096)
    rt.memcpy(b, a, 4096, K.DEVICE_TO_DEVICE)
    assert rt.copy_from_device(b, 4096) == b"\x5a" * 4096


@pytest.mark.parametrize(
    "kind,dst_dev,src_dev",
    [
        (K.HOST_TO_DEVICE, True, True),
        (K.HOST_TO_DEVICE, False, False),
        (K.DEVICE_TO_HOST, True, True),
        (K.DEVICE_TO_HOST, True, False),
        (K.DEVICE_TO_DEVICE, False, True),
        (K.DEVICE_TO_DEVICE, True, False),
        (K.HOST_TO_HOST, True, False),
        (K.HOST_TO_HOST, False, True),
    ],
)
def test_copy_wrong_direction(device_buffer, kind, dst_dev, src_dev):
    buf, host = host_buffer(b"\0" * 64)
    dev_a, dev_b = device_buffer(64), device_buffer(64)
    dst = dev_a if dst_dev else host
    src = dev_b if src_dev else host
    with raises("orErrorInvalidMemcpyDirection") as info:
        rt.memcpy(dst, src, 64, kind)
    assert kind.name.title().replace("_", "") in str(info.value)  # names the kind
    assert f"src {src:#x}" in str(info.value) and f"dst {dst:#x}" in str(info.value)


@pytest.mark.parametrize("kind", [5, 100, -1])
def test_copy_unknown_kind(device_buffer, kind):
    p = device_buffer(16)
    with raises("orErrorInvalidMemcpyDirection"):
        rt.memcpy(p, p, 16, kind)


def test_copy_out_of_allocation(device_buffer):
    p = device_buffer(1000)
    q = device_buffer(4096)
    buf, host = host_buffer(b"\0" * 8192)
    with raises("orErrorInvalidValue") as info:
        rt.memcpy(host, p, 1001, K.DEVICE_TO_HOST)  # one byte past the end
    assert "runs past the end" in str(info.value)
    with raises("orErrorInvalidValue"):
        rt.memcpy(p + 900, host, 101, K.HOST_TO_DEVICE)
    with raises("orErrorInvalidValue"):
        rt.memcpy(q, p, 2**64 - 1, K.DEVICE_TO_DEVICE)  # huge count
    with raises("orErrorInvalidValue"):
        rt.memcpy(host, p + 1000, 1, K.DEVICE_TO_HOST)  # padding after the end
    rt.memcpy(host, p + 900, 100, K.DEVICE_TO_HOST)  # exactly to the end is fine


def test_copy_freed_memory():
    p = rt.malloc(512)
    rt.free(p)
    buf, host = host_buffer(b"\0" * 512)
    with raises("orErrorInvalidValue") as info:
        rt.memcpy(host, p, 16, K.DEVICE_TO_HOST)
    assert "not inside a live allocation" in str(info.value)


def test_copy_beyond_pinned_allocation(device_buffer):
    p = device_buffer(2 * PAGE)
    h = rt.malloc_host(100)
    try:
        with raises("orErrorInvalidValue"):
            rt.memcpy(p, h, 200, K.HOST_TO_DEVICE)
    finally:
        rt.free_host(h)


def test_copy_zero_bytes_and_null(device_buffer):
    rt.memcpy(0, 0, 0, K.DEFAULT)  # nothing to do
    p = device_buffer(16)
    with raises("orErrorInvalidValue"):
        rt.memcpy(0, p, 16, K.DEVICE_TO_HOST)
    with raises("orErrorInvalidValue"):
        rt.memcpy(p, 0, 16, K.HOST_TO_DEVICE)


# ---------------------------------------------------------------- fills


def test_memset(device_buffer):
    p = device_buffer(1000)
    rt.memset(p, 0x41, 1000)
    rt.memset(p + 10, 0x142, 5)  # only the low byte counts, as in memset
    assert rt.copy_from_device(p, 20) == b"A" * 10 + b"B" * 5 + b"A" * 5


def test_memset_errors(device_buffer):
    p = device_buffer(100)
    with raises("orErrorInvalidValue"):
        rt.memset(p, 0, 101)
    buf, host = host_buffer(b"\0" * 16)
    with raises("orErrorInvalidDevicePointer"):
        rt.memset(host, 0, 16)
    with raises("orErrorInvalidValue"):
        rt.memset(0, 0, 16)
    rt.memset(0, 0, 0)


def test_memset_async(device_buffer):
    s = rt.Stream()
    p = device_buffer(4096)
    rt.memset_async(p, 0x33, 4096, s)
    with raises("orErrorInvalidValue"):
        rt.memset_async(p, 0, 4097, s)
    s.synchronize()
    assert rt.copy_from_device(p, 4096) == b"\x33" * 4096
