"""Property-based fuzzing of the runtime's Python API.

A hypothesis state machine makes random sequences of calls, valid and invalid:
malloc (zero, tiny, huge, past the capacity), free (double, interior, foreign
pointers), copies in every direction with in- and out-of-bounds ranges, fills,
streams, events and device switches, including destroyed and forged handles.
A host-side model predicts each outcome: valid calls succeed, invalid ones
raise OpenRegError naming the problem, bytes read back are the bytes written,
and the runtime's accounting (mem_get_info) matches the live allocations.

Everything is checked by address, as the runtime does: a freed pointer may
come back from a later malloc, and then it is valid again.

How much it explores is the hypothesis profile's (hypothesis_profiles.py): the default
run is derandomized and short; HYPOTHESIS_PROFILE=long (tox -e py311-fuzz) is random and
explores far more.
"""

import ctypes
import faulthandler
import os
import random
import re
from dataclasses import dataclass

import pytest
from hypothesis import assume, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import openreg_runtime as rt
from openreg_runtime import MemcpyKind as K
from openreg_runtime import _C
from runtime_helpers import run_python

GRANULE = 512  # allocation granularity; what each live allocation costs is rounded to it
MAX_COUNT = 64 * 1024  # largest copy or fill that really moves bytes: keeps steps cheap
MODELLED = 1 << 20  # allocations up to this size get a byte-exact model
# Handles with an even generation are never live (SlotTable), so these can
# never collide with a real stream or event, whatever else the process made.
FORGED_HANDLES = st.builds(lambda gen, low: (gen * 2) << 32 | low,
                           st.integers(0, 2**31 - 1), st.integers(0, 2**32 - 1))
HANG_SECONDS = 120  # a single example takes well under a second
NESTED_TIMEOUT = 1200  # the whole nested run, long profile included; a hang ends sooner
JUNK_POINTERS = st.sampled_from([8, 4096, 0x10000000, 2**63, 2**64 - 1])


def round_up(n: int) -> int:
    return (n + GRANULE - 1) // GRANULE * GRANULE


def outcome(call, problems):
    """No problems: call() must succeed (its result is returned). Otherwise it
    must raise OpenRegError naming one of them (any order of checks is fine)."""
    if not problems:
        return call()
    with pytest.raises(rt.OpenRegError) as info:
        call()
    err = info.value
    assert any(err.name == name and text in str(err) for name, text in problems), (
        f"raised {err!s}\nexpected one of {problems}")
    return None


@dataclass(eq=False)
class Alloc:
    ptr: int
    size: int
    device: int
    # The model: `data` holds what the device must hold where `known` is 1.
    # Fresh memory is unknown (it may hold what a freed allocation left).
    data: "bytearray | None" = None
    known: "bytearray | None" = None

    def __post_init__(self):
        if self.size <= MODELLED:
            self.data = bytearray(self.size)
            self.known = bytearray(self.size)


@dataclass(eq=False)
class Pinned:
    ptr: int
    size: int
    # Fresh pinned memory is known to be zero; a copy from an unmodelled
    # allocation makes the bytes it wrote unknown.
    data: bytearray
    known: bytearray


@dataclass(eq=False)
class StreamRec:
    handle: int
    device: int
    priority: int


@dataclass(eq=False)
class EventRec:
    handle: int
    device: int
    timing: bool
    recorded_on: "object | None" = None  # the stream key it was last recorded on


@dataclass
class Endpoint:
    """One side of a copy or a fill, as the caller passes it."""
    kind: str  # "device", "pinned", "pageable" or "null"
    addr: int
    role: str
    alloc: "Alloc | None" = None  # the live allocation containing addr, if any
    pinned: "Pinned | None" = None
    buffer: "bytearray | None" = None  # pageable: keeps the memory alive
    limit: int = 0  # bytes valid from addr (device / pinned)

    def problem(self, count: int):
        if self.kind == "null":
            return ("orErrorInvalidValue", f"{self.role} is NULL")
        if self.kind == "device":
            if self.alloc is None:
                return ("orErrorInvalidValue", "not inside a live allocation")
            if count > self.limit:
                return ("orErrorInvalidValue", "runs past the end of its allocation")
        if self.kind == "pinned" and count > self.limit:
            return ("orErrorInvalidValue", "runs past the end of its pinned allocation")
        return None


class RuntimeMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        # A deadlock shows up as a step that never returns: re-arm the hang
        # guard (conftest.py) per example, so that a long shrink does not trip it.
        faulthandler.dump_traceback_later(HANG_SECONDS, exit=True)
        self.count = rt.device_count()
        self.capacity = rt.get_device_properties(0).total_memory
        self.current = rt.current_device()
        # Other tests may have left allocations behind: only changes count.
        self.baseline = [self.free_bytes(d) for d in range(self.count)]
        self.used = [0] * self.count
        # Draws pick from these in creation order, never by address or handle:
        # those vary between runs, and hypothesis must be able to replay a run.
        self.allocs = []  # every allocation ever made, live or freed
        self.live = {}  # ptr -> Alloc
        self.pinned = []
        self.live_pinned = {}  # ptr -> Pinned
        self.streams = []
        self.live_streams = {}  # handle -> StreamRec
        self.events = []
        self.live_events = {}  # handle -> EventRec
        # Streams with asynchronous work nobody has waited for yet: user
        # stream handles, or ("default", device) for default streams.
        self.dirty = set()

    # ------------------------------------------------------------ helpers

    @staticmethod
    def free_bytes(device: int) -> int:
        with rt.device(device):
            free, total = rt.mem_get_info()
        return free

    def locate(self, addr: int):
        for a in self.live.values():
            if a.ptr <= addr < a.ptr + a.size:
                return a
        return None

    def stream_key(self, handle: int):
        if handle == 0:
            return ("default", self.current)
        return handle

    def stream_problem(self, handle: int):
        if handle != 0 and handle not in self.live_streams:
            return ("orErrorInvalidResourceHandle", "is not a live stream")
        return None

    def key_device(self, key) -> int:
        return key[1] if isinstance(key, tuple) else self.live_streams[key].device

    def allocate(self, size: int):
        self.record_allocation(rt.malloc(size), size)

    def record_allocation(self, ptr: int, size: int):
        d = self.current
        assert ptr % GRANULE == 0 and rt.device_of_pointer(ptr) == d
        for other in self.live.values():
            if other.device == d:
                assert (ptr + round_up(size) <= other.ptr
                        or other.ptr + round_up(other.size) <= ptr), "overlapping allocations"
        a = Alloc(ptr, size, d)
        self.allocs.append(a)
        self.live[ptr] = a
        self.used[d] += round_up(size)

    def create_stream(self, priority: int):
        handle = _C._stream_create_with_priority(0, priority)
        assert handle not in self.live_streams
        s = StreamRec(handle, self.current, min(0, max(-2, priority)))
        self.streams.append(s)
        self.live_streams[handle] = s

    def create_event(self, flags: int):
        handle = _C._event_create_with_flags(flags)
        assert handle not in self.live_events
        e = EventRec(handle, self.current, timing=not flags & 2)
        self.events.append(e)
        self.live_events[handle] = e

    def settle(self, keep=None):
        """Wait for outstanding asynchronous work (except on stream `keep`), as
        a correct program must before touching memory that work may use."""
        for key in sorted(self.dirty - {keep}, key=repr):
            if isinstance(key, tuple):
                with rt.device(key[1]):
                    _C._stream_synchronize(0)
                    assert _C._stream_query(0)
            else:
                _C._stream_synchronize(key)
                assert _C._stream_query(key)
        self.dirty &= {keep}

    def stream_arg(self, data, valid=False):
        """A stream handle: the default stream, a live one, or unless `valid`
        a destroyed or forged one."""
        choices = [st.just(0)]
        if self.live_streams:
            choices += [st.sampled_from(list(self.live_streams))] * 3
        if not valid:
            choices.append(FORGED_HANDLES)
            if self.streams:
                choices.append(st.sampled_from(self.streams).map(lambda s: s.handle))
        return data.draw(st.one_of(*choices), label="stream")

    def event_arg(self, data, label="event"):
        choices = [FORGED_HANDLES]
        if self.live_events:
            choices += [st.sampled_from(list(self.live_events))] * 4
        if self.events:
            choices.append(st.sampled_from(self.events).map(lambda e: e.handle))
        return data.draw(st.one_of(*choices), label=label)

    def pick_allocation(self, data, label: str, valid=False) -> Alloc:
        """A live allocation, or unless `valid` sometimes a freed one."""
        choices = [] if valid else [st.sampled_from(self.allocs)]
        if self.live:
            choices += [st.sampled_from(list(self.live.values()))] * 3
        return data.draw(st.one_of(*choices), label=label)

    def device_endpoint(self, data, role: str, valid=False) -> Endpoint:
        a = self.pick_allocation(data, f"{role} allocation", valid)
        offsets = st.integers(0, a.size - 1) if valid else st.one_of(
            st.integers(0, a.size), st.integers(0, a.size + GRANULE))
        offset = data.draw(offsets, label=f"{role} offset")
        addr = a.ptr + offset
        # Past the end of the last allocation lies host memory: not the
        # runtime's business (it cannot tell), and unsafe to copy from.
        assume(rt.device_of_pointer(addr) == a.device)
        live = self.locate(addr)
        limit = live.ptr + live.size - addr if live else 0
        return Endpoint("device", addr, role, alloc=live, limit=limit)

    def endpoint(self, data, role: str, kinds, valid=False) -> Endpoint:
        """One end of a copy or fill; a `valid` one is a place with at least
        one byte to use (pageable memory always is)."""
        kinds = [k for k in kinds if k != "device" or (self.live if valid else self.allocs)]
        kinds = [k for k in kinds if k != "pinned" or self.live_pinned]
        kinds = [k for k in kinds if k != "null" or not valid]
        kind = data.draw(st.sampled_from(kinds), label=f"{role} kind")
        if kind == "device":
            return self.device_endpoint(data, role, valid)
        if kind == "pinned":
            p = data.draw(st.sampled_from(list(self.live_pinned.values())),
                          label=f"{role} pinned")
            # Not past its end: that address is unregistered host memory (maybe
            # the next mapping), which the runtime rightly cannot check.
            offset = data.draw(st.integers(0, p.size - 1), label=f"{role} offset")
            return Endpoint("pinned", p.ptr + offset, role, pinned=p, limit=p.size - offset)
        if kind == "null":
            return Endpoint("null", 0, role)
        return Endpoint("pageable", 0, role)  # the buffer is made once the count is known

    def draw_count(self, data, ends, valid=False) -> int:
        limits = [e.limit for e in ends if e.kind in ("device", "pinned")]
        fits = st.integers(0, min([MAX_COUNT, *limits]))
        if valid:
            return data.draw(fits, label="count")
        choices = [fits] * 4 + [st.integers(0, 2 * MAX_COUNT)]
        # Pageable buffers are exactly `count` bytes: only device and pinned
        # ranges can be out of bounds, and only they can get absurd counts.
        if not any(e.kind == "pageable" for e in ends):
            choices.append(st.sampled_from([2**63, 2**64 - 1]))
        return data.draw(st.one_of(*choices), label="count")

    @staticmethod
    def fill_pageable(e: Endpoint, count: int, seed: int):
        if e.kind == "pageable":
            e.buffer = bytearray(random.Random(seed).randbytes(count)) if count else bytearray(1)
            e.addr = ctypes.addressof((ctypes.c_char * len(e.buffer)).from_buffer(e.buffer))

    def expected_bytes(self, e: Endpoint, count: int):
        """(bytes, known mask) that the source endpoint holds."""
        if e.kind == "pageable":
            return bytes(e.buffer[:count]), b"\x01" * count
        if e.kind == "pinned":
            off = e.addr - e.pinned.ptr
            return bytes(e.pinned.data[off:off + count]), bytes(e.pinned.known[off:off + count])
        a, off = e.alloc, e.addr - e.alloc.ptr
        if a.data is None:
            return bytes(count), bytes(count)
        return bytes(a.data[off:off + count]), bytes(a.known[off:off + count])

    @staticmethod
    def store(e: Endpoint, data: bytes, known: bytes):
        """Record in the model that the destination endpoint now holds `data`."""
        n = len(data)
        if e.kind == "pinned":
            off = e.addr - e.pinned.ptr
            e.pinned.data[off:off + n] = data
            e.pinned.known[off:off + n] = known
        elif e.kind == "device" and e.alloc.data is not None:
            off = e.addr - e.alloc.ptr
            e.alloc.data[off:off + n] = data
            e.alloc.known[off:off + n] = known

    @staticmethod
    def assert_matches(actual: bytes, expected: bytes, known: bytes, what: str):
        if b"\x00" not in known:
            assert actual == expected, what
            return
        wrong = [i for i in range(len(known)) if known[i] and actual[i] != expected[i]]
        assert not wrong, f"{what}: {len(wrong)} bytes differ, first at offset {wrong[0]}"

    # ------------------------------------------------------------ a starting point

    @initialize(sizes=st.lists(st.integers(1, 3 * 4096), min_size=1, max_size=3),
                streams=st.integers(0, 2), events=st.lists(st.integers(0, 3), max_size=3))
    def populate(self, sizes, streams, events):
        # Rules are picked at random (and some switched off per example), so
        # without this most sequences would never reach a live stream or event.
        for size in sizes:
            self.allocate(size)
        for _ in range(streams):
            self.create_stream(0)
        for flags in events:
            self.create_event(flags)

    # ------------------------------------------------------------ devices

    @rule(index=st.one_of(st.integers(-3, 5), st.sampled_from([2**31 - 1, -(2**31)])))
    def set_device(self, index):
        problems = [] if 0 <= index < self.count else [(
            "orErrorInvalidDevice",
            f"device index {index} is out of range: {self.count} device"
            f"{'' if self.count == 1 else 's'}, valid indices 0..{self.count - 1}")]
        outcome(lambda: rt.set_device(index), problems)
        if not problems:
            self.current = index

    @rule(index=st.integers(-1, 3))
    def device_synchronize(self, index):
        valid = 0 <= index < self.count
        outcome(lambda: rt.synchronize(index),
                [] if valid else [("orErrorInvalidDevice", "is out of range")])
        if valid:
            self.dirty = {k for k in self.dirty if self.key_device(k) != index}

    # ------------------------------------------------------------ allocation

    @rule(data=st.data())
    def malloc(self, data):
        cap = self.capacity
        size = data.draw(st.one_of(
            st.integers(0, 4096),
            st.integers(0, MODELLED),
            st.integers(MODELLED, cap),
            st.sampled_from([0, 1, GRANULE - 1, GRANULE, GRANULE + 1, cap // 2, cap - GRANULE,
                             cap, cap + 1, 2**63, 2**64 - 1]),
        ), label="size")
        d = self.current
        free = self.baseline[d] - self.used[d]
        if size > cap:
            outcome(lambda: rt.malloc(size), [(
                "orErrorMemoryAllocation",
                f"out of memory on device {d}: tried to allocate {size} bytes, but the "
                f"device's capacity is {cap} bytes")])
            return
        if size == 0:
            assert rt.malloc(0) == 0
            return
        try:
            ptr = rt.malloc(size)
        except rt.OpenRegError as e:
            assert e.name == "orErrorMemoryAllocation", str(e)
            m = re.search(rf"out of memory on device {d}: tried to allocate {size} bytes; "
                          rf"(\d+) bytes free of {cap} total \(largest free block (\d+) bytes\)",
                          str(e))
            assert m, str(e)
            reported_free, largest = map(int, m.groups())
            assert reported_free == free, str(e)
            assert largest < round_up(size), f"{e}: a large enough block was free"
            return
        assert round_up(size) <= free, f"malloc({size}) succeeded with {free} bytes free"
        self.record_allocation(ptr, size)

    @precondition(lambda self: self.allocs)
    @rule(data=st.data(), where=st.sampled_from(["base", "base", "interior", "past end"]))
    def free(self, data, where):
        a = self.pick_allocation(data, "allocation")
        addr = {"base": a.ptr,
                "interior": a.ptr + data.draw(st.integers(1, max(1, a.size - 1)), label="offset"),
                "past end": a.ptr + round_up(a.size)}[where]
        assume(rt.device_of_pointer(addr) == a.device)
        self.settle()  # a correct program does not free memory in use
        target = self.live.get(addr)
        inside = self.locate(addr)
        if target is not None:
            problems = []
        elif inside is not None:
            problems = [("orErrorInvalidDevicePointer",
                         f"cannot free {addr:#x} on device {a.device}: it points "
                         f"{addr - inside.ptr} bytes into the allocation at {inside.ptr:#x}")]
        else:
            problems = [("orErrorInvalidDevicePointer",
                         f"cannot free {addr:#x} on device {a.device}: it is not a live allocation")]
        outcome(lambda: rt.free(addr), problems)
        if target is not None:
            del self.live[addr]
            self.used[target.device] -= round_up(target.size)

    @rule(what=st.sampled_from(["null", "pageable", "pinned", "junk"]), junk=JUNK_POINTERS)
    def free_non_device(self, what, junk):
        buf = ctypes.create_string_buffer(16)
        if what == "pinned" and not self.live_pinned:
            what = "junk"
        addr = {"null": 0, "pageable": ctypes.addressof(buf), "junk": junk,
                "pinned": next(iter(self.live_pinned), 0)}[what]
        if what == "null":
            rt.free(0)  # a no-op, as cudaFree(NULL)
            return
        hint = "(pinned host memory is freed with orFreeHost)" if what == "pinned" else ""
        outcome(lambda: rt.free(addr), [
            ("orErrorInvalidDevicePointer", f"orFree: {addr:#x} is not device memory{' ' + hint if hint else ''}")])

    @rule(data=st.data())
    def pointer_attributes(self, data):
        e = self.endpoint(data, "ptr", ["device"] * 4 + ["pinned", "pageable"])
        if e.kind != "device":
            self.fill_pageable(e, 16, 0)
            attrs = rt.pointer_attributes(e.addr)
            assert attrs.device == -1 and attrs.host_pointer == e.addr and attrs.device_pointer == 0
            if e.kind == "pinned":
                assert attrs.type == rt.MemoryType.HOST
                assert (attrs.base, attrs.size) == (e.pinned.ptr, e.pinned.size)
            else:
                assert attrs.type == rt.MemoryType.UNREGISTERED
            with pytest.raises(rt.OpenRegError, match="is not in any device's memory"):
                rt.kernel_pointer(e.addr)
            return
        # Translation is by range only: freed device memory translates too.
        assert rt.device_pointer(rt.kernel_pointer(e.addr)) == e.addr
        if e.alloc is None:
            outcome(lambda: rt.pointer_attributes(e.addr),
                    [("orErrorInvalidDevicePointer", "not inside a live allocation")])
            return
        attrs = rt.pointer_attributes(e.addr)
        assert attrs.type == rt.MemoryType.DEVICE
        assert (attrs.device, attrs.base, attrs.size, attrs.device_pointer) == (
            e.alloc.device, e.alloc.ptr, e.alloc.size, e.addr)

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def read_back(self, data):
        """The whole allocation, through a copy and through the kernel view."""
        a = data.draw(st.sampled_from(list(self.live.values())))
        if a.data is None:
            return
        self.settle(keep=("default", self.current))
        got = rt.copy_from_device(a.ptr, a.size)
        self.assert_matches(got, a.data, a.known, f"copy of {a.size}-byte allocation")
        kernel = ctypes.string_at(rt.kernel_pointer(a.ptr), a.size)
        self.assert_matches(kernel, a.data, a.known, "kernel view")
        self.dirty.discard(("default", self.current))

    # ------------------------------------------------------------ pinned memory

    @rule(size=st.one_of(st.integers(0, 3 * 4096), st.integers(0, MAX_COUNT),
                         st.sampled_from([2**63, 2**64 - 4096, 2**64 - 1])))
    def malloc_host(self, size):
        if size > 2**62:
            outcome(lambda: rt.malloc_host(size),
                    [("orErrorMemoryAllocation", f"orMallocHost: cannot map {size} bytes")])
            return
        ptr = rt.malloc_host(size)
        if size == 0:
            assert ptr == 0
            return
        for other in self.live_pinned.values():
            assert ptr + size <= other.ptr or other.ptr + other.size <= ptr
        p = Pinned(ptr, size, bytearray(size), bytearray(b"\x01" * size))
        self.pinned.append(p)
        self.live_pinned[ptr] = p

    @precondition(lambda self: self.pinned)
    @rule(data=st.data(), interior=st.booleans())
    def free_host(self, data, interior):
        p = data.draw(st.sampled_from(self.pinned))
        addr = p.ptr + (1 if interior else 0)
        self.settle()
        live = self.live_pinned.get(addr)
        outcome(lambda: rt.free_host(addr), [] if live else [
            ("orErrorInvalidValue", f"orFreeHost: {addr:#x} is not pinned memory from orMallocHost")])
        if live:
            del self.live_pinned[addr]

    @precondition(lambda self: self.live_pinned)
    @rule(data=st.data(), seed=st.integers(0, 2**32))
    def write_pinned(self, data, seed):
        p = data.draw(st.sampled_from(list(self.live_pinned.values())))
        self.settle()  # queued copies may still read or write it
        fresh = random.Random(seed).randbytes(p.size)
        ctypes.memmove(p.ptr, fresh, p.size)
        p.data[:] = fresh
        p.known[:] = b"\x01" * p.size

    # ------------------------------------------------------------ copies and fills

    # Each of these makes only valid calls half of the time (`valid`): random
    # arguments alone rarely line up, and the byte model needs data to flow.
    @rule(data=st.data(), valid=st.booleans(), asynchronous=st.booleans(),
          seed=st.integers(0, 2**32),
          kind_choice=st.sampled_from(["right", "right", "right", "default", "wrong", "unknown"]))
    def memcpy(self, data, valid, asynchronous, seed, kind_choice):
        kinds = ["device"] * 6 + ["pinned", "pinned", "pageable", "pageable", "null"]
        dst = self.endpoint(data, "dst", kinds, valid)
        src = self.endpoint(data, "src", kinds, valid)
        count = self.draw_count(data, [dst, src], valid)
        if valid and kind_choice in ("wrong", "unknown"):
            kind_choice = "right"
        self.fill_pageable(dst, count, seed)
        self.fill_pageable(src, count, seed + 1)
        inferred = (K.DEVICE_TO_DEVICE if src.kind == "device" else K.HOST_TO_DEVICE) \
            if dst.kind == "device" else \
            (K.DEVICE_TO_HOST if src.kind == "device" else K.HOST_TO_HOST)
        if kind_choice == "wrong":
            kind = data.draw(st.sampled_from([k for k in range(4) if k != inferred]), label="kind")
        elif kind_choice == "unknown":
            kind = data.draw(st.sampled_from([-1, 5, 100, 2**31 - 1]), label="kind")
        else:
            kind = int(K.DEFAULT if kind_choice == "default" else inferred)
        handle = self.stream_arg(data, valid) if asynchronous else 0
        key = self.stream_key(handle)

        problems = []
        if not 0 <= kind <= 4:
            problems.append(("orErrorInvalidMemcpyDirection", f"unknown copy kind {kind}"))
        if asynchronous and self.stream_problem(handle):
            problems.append(self.stream_problem(handle))
        if count and not problems:
            problems += [p for p in (dst.problem(count), src.problem(count)) if p]
            if not problems and kind not in (K.DEFAULT, inferred):
                problems.append(("orErrorInvalidMemcpyDirection", "does not match the pointers"))
        expected, known = (self.expected_bytes(src, count) if count and not problems
                           else (b"", b""))

        self.settle(keep=key)  # other streams' work must not race with this one
        if asynchronous:
            outcome(lambda: _C._memcpy_async(dst.addr, src.addr, count, kind, handle), problems)
        else:
            outcome(lambda: rt.memcpy(dst.addr, src.addr, count, kind), problems)
        if problems or count == 0:
            return
        self.store(dst, expected, known)
        inline = not asynchronous or "pageable" in (dst.kind, src.kind)
        if inline:  # done on return, after all earlier work of its stream
            self.dirty.discard(key)
        else:
            self.dirty.add(key)
        if dst.kind == "pageable":
            self.assert_matches(bytes(dst.buffer[:count]), expected, known, "copy to host")

    @rule(data=st.data(), valid=st.booleans(), asynchronous=st.booleans(),
          value=st.one_of(st.integers(0, 255), st.integers(-(2**31), 2**31 - 1)))
    def memset(self, data, valid, asynchronous, value):
        kinds = ["device"] if valid else ["device"] * 6 + ["pinned", "pageable", "null"]
        if valid and not self.live:
            kinds = ["pageable"]  # nothing valid to fill: an error case after all
        e = self.endpoint(data, "devPtr", kinds, valid)
        count = self.draw_count(data, [e], valid)
        self.fill_pageable(e, count, value)
        handle = self.stream_arg(data, valid) if asynchronous else 0
        key = self.stream_key(handle)
        problems = []
        if asynchronous and self.stream_problem(handle):
            problems.append(self.stream_problem(handle))
        if count and not problems:
            if e.kind == "null":
                problems.append(("orErrorInvalidValue", "devPtr is NULL"))
            elif e.problem(count):
                problems.append(e.problem(count))
            elif e.kind != "device":
                what = "pinned host memory" if e.kind == "pinned" else "host memory"
                problems.append(("orErrorInvalidDevicePointer", f"{e.addr:#x} is {what}, not device memory"))
        self.settle(keep=key)
        if asynchronous:
            outcome(lambda: _C._memset_async(e.addr, value, count, handle), problems)
        else:
            outcome(lambda: rt.memset(e.addr, value, count), problems)
        if problems or count == 0:
            return
        self.store(e, bytes([value & 0xFF]) * count, b"\x01" * count)
        if asynchronous:
            self.dirty.add(key)
        else:
            self.dirty.discard(key)

    # ------------------------------------------------------------ streams

    @rule(flags=st.sampled_from([0, 0, 0, 1, 2**31]), priority=st.integers(-5, 3))
    def stream_create(self, flags, priority):
        if flags:
            outcome(lambda: _C._stream_create_with_priority(flags, priority),
                    [("orErrorInvalidValue", f"flags must be 0, got {flags}")])
            return
        self.create_stream(priority)

    @rule(data=st.data())
    def stream_destroy(self, data):
        handle = self.stream_arg(data)
        if handle == 0:
            problems = [("orErrorInvalidResourceHandle", "the default stream (NULL) cannot be destroyed")]
        else:
            problems = [p for p in [self.stream_problem(handle)] if p]
        outcome(lambda: _C._stream_destroy(handle), problems)
        if not problems:
            # Pending work finishes first: its results must be in the model.
            del self.live_streams[handle]
            self.dirty.discard(handle)

    @rule(data=st.data())
    def stream_query_and_sync(self, data):
        handle = self.stream_arg(data)
        key = self.stream_key(handle)
        problems = [p for p in [self.stream_problem(handle)] if p]
        done = outcome(lambda: _C._stream_query(handle), problems)
        if problems:
            for call in (_C._stream_synchronize, _C._stream_get_device, _C._stream_get_priority):
                outcome(lambda: call(handle), problems)
            return
        assert done is True or (done is False and key in self.dirty)
        _C._stream_synchronize(handle)
        assert _C._stream_query(handle) is True
        self.dirty.discard(key)
        if handle:
            rec = self.live_streams[handle]
            assert _C._stream_get_device(handle) == rec.device
            assert _C._stream_get_priority(handle) == rec.priority

    @rule(data=st.data(), flags=st.sampled_from([0, 0, 0, 1]))
    def stream_wait_event(self, data, flags):
        handle = self.stream_arg(data)
        event = self.event_arg(data)
        problems = []
        if flags:
            problems.append(("orErrorInvalidValue", "flags must be 0"))
        else:
            problems += [p for p in [self.stream_problem(handle)] if p]
            if event not in self.live_events:
                problems.append(("orErrorInvalidResourceHandle", "is not a live event"))
        outcome(lambda: _C._stream_wait_event(handle, event, flags), problems)
        if not problems:
            waited = self.live_events[event].recorded_on
            if waited in self.dirty:  # later work on this stream waits for it
                self.dirty.add(self.stream_key(handle))

    # ------------------------------------------------------------ events

    @rule(flags=st.sampled_from([0, 1, 2, 3, 4, 6, 7, 8, 0x80000000]))
    def event_create(self, flags):
        if flags & ~7:
            outcome(lambda: _C._event_create_with_flags(flags),
                    [("orErrorInvalidValue", f"unknown flags {flags:#x}")])
            return
        if flags & 4 and not flags & 2:
            outcome(lambda: _C._event_create_with_flags(flags),
                    [("orErrorInvalidValue", "orEventInterprocess requires orEventDisableTiming")])
            return
        # Interprocess events (4) behave like any other within one process.
        self.create_event(flags)

    @rule(data=st.data())
    def event_destroy(self, data):
        event = self.event_arg(data)
        problems = [] if event in self.live_events else [
            ("orErrorInvalidResourceHandle", "is not a live event")]
        outcome(lambda: _C._event_destroy(event), problems)
        self.live_events.pop(event, None)

    @rule(data=st.data())
    def event_record(self, data):
        event = self.event_arg(data)
        handle = self.stream_arg(data)
        problems = []
        if event not in self.live_events:
            problems.append(("orErrorInvalidResourceHandle", "is not a live event"))
        if self.stream_problem(handle):
            problems.append(self.stream_problem(handle))
        if not problems:
            e = self.live_events[event]
            stream_device = self.live_streams[handle].device if handle else self.current
            if e.device != stream_device:
                shown = f"{handle:#x}" if handle else "(nil)"  # as printf's %p
                problems.append(("orErrorInvalidValue",
                                 f"belongs to device {e.device} but stream {shown} to device "
                                 f"{stream_device}; record events on a stream of their own device"))
        outcome(lambda: _C._event_record(event, handle), problems)
        if not problems:
            self.live_events[event].recorded_on = self.stream_key(handle)

    @rule(data=st.data())
    def event_query_and_sync(self, data):
        event = self.event_arg(data)
        if event not in self.live_events:
            for call in (_C._event_query, _C._event_synchronize):
                outcome(lambda: call(event), [("orErrorInvalidResourceHandle", "is not a live event")])
            return
        e = self.live_events[event]
        done = _C._event_query(event)
        assert done is True or (done is False and e.recorded_on in self.dirty)
        _C._event_synchronize(event)
        assert _C._event_query(event) is True

    @rule(data=st.data())
    def event_elapsed_time(self, data):
        start = self.event_arg(data, "start")
        end = self.event_arg(data, "end")
        problems = []
        for handle in (start, end):
            e = self.live_events.get(handle)
            if e is None:
                problems.append(("orErrorInvalidResourceHandle", "is not a live event"))
            elif not e.timing:
                problems.append(("orErrorInvalidResourceHandle", "was created with orEventDisableTiming"))
            elif e.recorded_on is None:
                problems.append(("orErrorInvalidResourceHandle", "was never recorded"))
        if not problems:
            # Completed events only: NotReady is a matter of timing, not of validity.
            for handle in (start, end):
                _C._event_synchronize(handle)
        ms = outcome(lambda: _C._event_elapsed_time(start, end), problems)
        if not problems:
            assert _C._event_elapsed_time(end, start) == -ms
            assert _C._event_elapsed_time(start, start) == 0.0

    # ------------------------------------------------------------ invariants

    @invariant()
    def accounting_matches_live_allocations(self):
        for d in range(self.count):
            with rt.device(d):
                free, total = rt.mem_get_info()
            assert total == self.capacity
            assert free == self.baseline[d] - self.used[d], (
                f"device {d}: runtime reports {free} bytes free, the model "
                f"{self.baseline[d] - self.used[d]}")

    @invariant()
    def current_device_matches(self):
        assert rt.current_device() == self.current

    @invariant()
    def pinned_memory_holds_its_bytes(self):
        if not self.dirty:
            for p in self.live_pinned.values():
                self.assert_matches(ctypes.string_at(p.ptr, p.size), p.data, p.known, "pinned memory")

    def teardown(self):
        self.settle()
        for handle in list(self.live_streams):
            _C._stream_destroy(handle)
        for handle in list(self.live_events):
            _C._event_destroy(handle)
        for ptr in list(self.live):
            rt.free(ptr)
        for ptr in list(self.live_pinned):
            rt.free_host(ptr)
        rt.set_device(0)
        assert [self.free_bytes(d) for d in range(self.count)] == self.baseline


# The active profile's settings (the default TestCase settings suppress every health check).
RuntimeMachine.TestCase.settings = settings()


@pytest.mark.skipif(rt.device_count() == 0 or rt.get_device_properties(0).total_memory % GRANULE,
                    reason="needs a device whose capacity is a whole number of granules")
class TestRuntimeFuzz(RuntimeMachine.TestCase):
    pass


@pytest.mark.hypothesis  # hypothesis runs in the child; py311-fuzz selects by this marker
@pytest.mark.skipif(os.environ.get("OPENREG_FUZZ_NESTED") == "1", reason="already the nested run")
def test_fuzz_one_small_device():
    """The same machine on a single 3 MiB device, in a fresh interpreter (the
    runtime reads its configuration once): there OOM, fragmentation and the
    release of freed pages next to live allocations happen all the time."""
    env = {"OPENREG_DEVICE_COUNT": "1", "OPENREG_DEVICE_MEMORY": "3MiB", "OPENREG_FUZZ_NESTED": "1",
           "HYPOTHESIS_PROFILE": settings.get_current_profile_name()}
    args = [__file__, "-q", "-p", "no:cacheprovider", "-k", "TestRuntimeFuzz"]
    # The child guards each of its examples against hangs; ours (conftest.py)
    # would cut a long profile short.
    faulthandler.cancel_dump_traceback_later()
    proc = run_python(f"import sys, pytest; sys.exit(pytest.main({args!r}))", env,
                      timeout=NESTED_TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
