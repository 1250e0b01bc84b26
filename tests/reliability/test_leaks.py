"""Leak loops: repeated real work must leave every counter the runtime exposes exactly flat.

After a warm-up (long enough for every pattern a loop repeats to have occurred once), the
device allocator's counters, the set of pinned host blocks, the runtime's event table, the
stream pool and the process's threads may not grow by a single unit per iteration; once
everything is deleted and the caches are emptied they are back to their starting values.
"""

import gc
import os

import openreg_runtime
import pytest
import torch
from torch import nn

openreg = torch.openreg

# The allocator statistics that must stay flat and come back exactly: bytes and blocks in
# use and held, and how many device allocations the cache made (flat: every request hit).
COUNTERS = (
    "allocated_bytes.all.current",
    "requested_bytes.all.current",
    "active.all.current",
    "active_bytes.all.current",
    "allocation.all.current",
    "reserved_bytes.all.current",
    "segment.all.current",
    "num_device_alloc",
)


def counters(device: int) -> dict[str, int]:
    openreg.synchronize(device)
    stats = openreg.memory_stats(device)
    return {key: stats[key] for key in COUNTERS}


def live_events() -> int:
    """How many runtime events exist (call it with no other thread using openreg). A handle
    is (generation << 32 | slot + 1), the generation is 1 in a slot's first life, and freed
    slots are reused before new ones are made (runtime SlotTable.h): making events until one
    is new counts the free slots, and the slots made minus the free ones are live."""
    made = []
    while True:
        event = openreg.Event()
        event.record()
        made.append(event)
        if event.event_id >> 32 == 1:
            return (event.event_id & 0xFFFFFFFF) - 1 - (len(made) - 1)


# Events that asynchronous work holds until the allocator next looks at it: whether one is
# already released depends on timing, so their number may vary by this much; a leak grows
# by one or more per iteration.
EVENT_SLACK = 2


def thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


@pytest.fixture
def baseline():
    """Both devices idle with empty caches: their counters, free bytes and live events."""
    gc.collect()
    openreg.empty_cache()
    devices = range(openreg.device_count())
    # num_device_alloc is cumulative: compare it within a test, not with the baseline.
    return ({d: counters(d) for d in devices}, {d: openreg.mem_get_info(d)[0] for d in devices},
            live_events())


def assert_back_to(baseline) -> None:
    gc.collect()
    openreg.empty_cache()
    start, free, events = baseline
    assert live_events() == events
    for device, before in start.items():
        after = counters(device)
        del before["num_device_alloc"], after["num_device_alloc"]
        assert after == before, f"openreg:{device} after cleanup"
        assert openreg.mem_get_info(device)[0] == free[device], f"openreg:{device} free bytes"


# ------------------------------------------------------------------------------ training

def mlp():
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.GELU(),
                          nn.Linear(128, 10))
    return model, (32, 64), lambda out: out


def conv_net():
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(16, 10))
    return model, (8, 3, 16, 16), lambda out: out


def transformer():
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, batch_first=True)
    return layer, (4, 12, 32), lambda out: out.mean(dim=1)[:, :10]


CASES = {
    # name: (model, optimizer, device, autocast every n-th step (0: never))
    "mlp-adam-openreg1": (mlp, lambda p: torch.optim.Adam(p, lr=1e-3), "openreg:1", 0),
    "conv-sgd-momentum-autocast": (
        conv_net, lambda p: torch.optim.SGD(p, lr=1e-2, momentum=0.9), "openreg:0", 3),
    "transformer-adamw-autocast": (
        transformer, lambda p: torch.optim.AdamW(p, lr=1e-3), "openreg:0", 3),
}


@pytest.mark.parametrize("case", CASES)
def test_training_steps_keep_memory_flat(case, baseline):
    build, make_optimizer, device, autocast_every = CASES[case]
    index = torch.device(device).index
    torch.manual_seed(0)
    model, input_shape, head = build()
    model = model.to(device)
    optimizer = make_optimizer(model.parameters())
    inputs = torch.randn(input_shape, device=device)
    targets = torch.randint(0, 10, (input_shape[0],), device=device)

    def step(number: int) -> float:
        # Both zero_grad modes: grads freed and re-made, or kept and zeroed in place.
        optimizer.zero_grad(set_to_none=number % 2 == 0)
        autocast = autocast_every > 0 and number % autocast_every == 0
        with torch.autocast("openreg", dtype=torch.bfloat16, enabled=autocast):
            loss = nn.functional.cross_entropy(head(model(inputs)).float(), targets)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss.item()

    period = 6  # lcm of the zero_grad and autocast patterns
    for number in range(2 * period):
        step(number)
    settled = counters(index)
    losses = []
    for number in range(2 * period, 12 * period):
        losses.append(step(number))
        assert counters(index) == settled, f"step {number}"
    assert torch.isfinite(torch.tensor(losses)).all()
    del model, optimizer, inputs, targets
    assert_back_to(baseline)


# ------------------------------------------------------------------ other allocator users

def test_record_stream_loop_returns_blocks_and_events(baseline):
    # Memory used on a side stream is freed through record_stream's pending events.
    side = openreg.Stream()
    source = torch.arange(1 << 14, dtype=torch.float32, device="openreg")
    total = torch.zeros(1 << 14, device="openreg")

    def step():
        tensor = source * 2  # made on the default stream
        side.wait_stream(openreg.current_stream())
        with openreg.stream(side):
            total.add_(tensor.sqrt())
        tensor.record_stream(side)
        del tensor
        openreg.current_stream().wait_stream(side)

    for _ in range(10):
        step()
    settled, events = counters(0), live_events()
    for number in range(300):
        step()
        assert counters(0) == settled, f"step {number}"
        if number % 50 == 49:
            assert live_events() <= events + EVENT_SLACK, f"step {number}: events leak"
    expected = torch.zeros(1 << 14)
    for _ in range(310):  # the same additions in the same order: exactly equal
        expected.add_((torch.arange(1 << 14, dtype=torch.float32) * 2).sqrt())
    assert torch.equal(total.cpu(), expected)
    del source, total
    assert_back_to(baseline)


# ------------------------------------------------------------------------------- pinned

def test_pinned_batches_reuse_host_blocks(baseline):
    # A DataLoader with pin_memory=True: every batch is pinned anew, copied to the device
    # without blocking, and results come back into pinned memory without blocking.
    device_stream = openreg.current_stream()
    pinned = set()

    def step(number: int) -> None:
        batch = torch.full((64, 256), float(number)).pin_memory()
        on_device = batch.to("openreg", non_blocking=True)
        result = torch.empty(64, pin_memory=True)
        result.copy_(on_device.sum(dim=1), non_blocking=True)
        pinned.update({batch.data_ptr(), result.data_ptr()})
        device_stream.synchronize()
        assert result.eq(256.0 * number).all(), number

    for number in range(10):
        step(number)
    blocks, settled, events = set(pinned), counters(0), live_events()
    for number in range(10, 500):
        step(number)
        assert pinned == blocks, f"step {number}: new pinned blocks were allocated"
        assert counters(0) == settled, f"step {number}"
        if number % 50 == 49:
            assert live_events() <= events + EVENT_SLACK, f"step {number}: events leak"
    assert_back_to(baseline)
    # Every pinned block went back to the OS: the runtime no longer knows any of them.
    kinds = {openreg_runtime.pointer_attributes(p).type for p in blocks}
    assert kinds == {openreg_runtime.MemoryType.UNREGISTERED}


def test_reused_pinned_buffer_does_not_collect_events(baseline):
    # A staging buffer pinned once and reused, as in a prefetching input pipeline.
    def copy_loop(steps: int) -> tuple[int, int]:  # live events after 10 and after all steps
        host = torch.arange(4096, dtype=torch.float32).pin_memory()
        out = torch.empty(4096).pin_memory()
        on_device = torch.empty(4096, device="openreg")
        for number in range(steps):
            on_device.copy_(host, non_blocking=True)
            out.copy_(on_device, non_blocking=True)
            openreg.current_stream().synchronize()
            assert torch.equal(out, host)
            if number == 9:
                warm = live_events()
        return warm, live_events()

    warm, end = copy_loop(300)  # returns first: a failure here keeps no tensors alive
    assert end <= warm + EVENT_SLACK, f"{end - warm} more live events after 290 steps"
    assert_back_to(baseline)


# ------------------------------------------------------------------------ streams, events

def test_streams_and_events_made_in_a_loop_are_recycled(baseline):
    # Streams come from fixed per-device pools (a worker thread each, started on first
    # use) and events are runtime objects destroyed with their Python object.
    least, greatest = openreg.Stream.priority_range()
    priorities = range(greatest, least + 1)

    def step(device: int, priority: int) -> openreg.Stream:
        stream = openreg.Stream(device=device, priority=priority)
        with openreg.stream(stream):
            start = openreg.Event(enable_timing=True)
            start.record()
            value = torch.full((4,), float(priority), device=device) + 1
            end = stream.record_event(openreg.Event(enable_timing=True))
            marker = torch.Event(device=f"openreg:{device}")
            marker.record(stream)
        other = openreg.current_stream(device)
        other.wait_event(marker)
        other.wait_stream(stream)
        end.synchronize()
        assert start.elapsed_time(end) >= 0
        assert value.cpu().tolist() == [priority + 1.0] * 4
        return stream

    # Warm-up: every pool stream of every priority on both devices has run something.
    handles = {step(d, p).native_handle for _ in range(40) for d in (0, 1) for p in priorities}
    threads, events = thread_count(), live_events()
    for number in range(400):
        stream = step(number % 2, priorities[number % len(priorities)])
        assert stream.native_handle in handles, f"step {number}: a stream outside the pool"
        if number % 50 == 49:  # every event above was dropped with its Python object
            assert live_events() == events, f"step {number}: events leak"
    assert thread_count() == threads
    assert_back_to(baseline)
