"""Memory debugging after torch.cuda.memory: snapshots of the caching allocator, the
allocation history with stack traces rendered by torch.cuda._memory_viz, the
per-process memory fraction, memory_summary, profile_memory=True, MemPool's absence,
and every torch.accelerator.memory function on openreg."""

import base64
import json
import math
import pickle
import re

import pytest
import torch
import torch.cuda._memory_viz as memory_viz
from torch.profiler import ProfilerActivity, profile

MiB = 1 << 20


@pytest.fixture
def recording():
    """Records the history for one test, then stops and forgets it."""
    torch.openreg.memory._record_memory_history(stacks="python", max_entries=10_000,
                                                clear_history=True)
    try:
        yield
    finally:
        torch.openreg.memory._record_memory_history(enabled=None)


def segment_at(snapshot_segments, address):
    matches = [s for s in snapshot_segments if s["address"] == address]
    assert len(matches) == 1, f"no single segment at {address:#x}"
    return matches[0]


def test_snapshot_shows_live_cached_and_released_blocks():
    torch.openreg.empty_cache()
    big = torch.empty(3 * MiB, dtype=torch.uint8, device="openreg:1")
    small = torch.empty(1000, dtype=torch.uint8, device="openreg:1")
    big_address = big.untyped_storage().data_ptr()
    segments = torch.openreg.memory_snapshot()
    entry = segment_at(segments, big_address)
    assert entry["device"] == 1 and entry["segment_type"] == "large"
    assert entry["total_size"] == 3 * MiB and entry["allocated_size"] == 3 * MiB
    assert entry["blocks"] == [{"address": big_address, "size": 3 * MiB,
                                "requested_size": 3 * MiB, "state": "active_allocated",
                                "frames": []}]
    small_entry = segment_at(segments, small.untyped_storage().data_ptr())
    assert small_entry["segment_type"] == "small"
    assert small_entry["total_size"] == 1024 and small_entry["requested_size"] == 1000
    # Reserved memory is exactly the segments' sizes.
    reserved = sum(s["total_size"] for s in segments if s["device"] == 1)
    assert reserved == torch.openreg.memory_reserved(1)

    del big
    torch.openreg.synchronize(1)
    cached = segment_at(torch.openreg.memory_snapshot(), big_address)
    assert cached["blocks"][0]["state"] == "inactive" and cached["allocated_size"] == 0
    torch.openreg.empty_cache()
    assert all(s["address"] != big_address for s in torch.openreg.memory_snapshot())
    with pytest.raises(ValueError, match="no memory pools"):
        torch.openreg.memory_snapshot(mempool_id=(1, 0))


def make_activations():
    """A function name the recorded stacks must show."""
    weights = torch.ones(256, 1024, device="openreg")
    return weights * 2


def test_history_dump_renders_with_memory_viz(recording, tmp_path):
    torch.openreg.empty_cache()
    result = make_activations()
    address = result.untyped_storage().data_ptr()
    del result
    path = tmp_path / "openreg.pickle"
    torch.openreg.memory._dump_snapshot(str(path))
    with open(path, "rb") as file:
        snapshot = pickle.load(file)

    trace = snapshot["device_traces"][torch.openreg.current_device()]
    actions = [(e["action"], e["addr"]) for e in trace if e.get("addr") == address]
    assert actions[:4] == [("segment_alloc", address), ("alloc", address),
                           ("free_requested", address), ("free_completed", address)]
    alloc = next(e for e in trace if e["action"] == "alloc" and e["addr"] == address)
    assert alloc["size"] == 256 * 1024 * 4
    assert any(f["name"] == "make_activations" and f["filename"] == __file__
               for f in alloc["frames"]), alloc["frames"]
    assert all(e["time_us"] > 0 for e in trace)

    # PyTorch's own renderers read it: the text trace, the segment flamegraph's input,
    # the segment summary and the HTML timeline.
    text = memory_viz.trace(snapshot)
    assert re.search(r"= cudaMalloc\(%d, 1\.0MiB\)" % address, text), text[-2000:]
    assert "del " in text and "free completed" in text
    weights = torch.ones(256, 1024, device="openreg")  # a live block with a stack
    live = torch.openreg.memory._snapshot()
    flame = memory_viz.segments(live, format_flamegraph=lambda lines: lines)
    assert f"seg_{weights.untyped_storage().data_ptr()};active_allocated;" in flame
    assert "test_history_dump_renders_with_memory_viz" in flame
    assert "total_reserved" in memory_viz.segsum(live)
    html = memory_viz.trace_plot(snapshot)
    encoded = json.loads(re.search(r"const local_files = (\[.*\])", html).group(1))
    assert pickle.loads(base64.b64decode(encoded[0]["base64"]))["device_traces"] == \
        snapshot["device_traces"]


def test_history_options(recording):
    torch.openreg.memory._record_memory_history(enabled="state", context="state",
                                                stacks="python")
    kept = torch.empty(100, device="openreg")
    snapshot = torch.openreg.memory._snapshot()
    assert all(trace == [] for trace in snapshot["device_traces"])  # "state": no history
    block = segment_at(snapshot["segments"], kept.untyped_storage().data_ptr())["blocks"][0]
    assert any(f["name"] == "test_history_options" for f in block["frames"])

    # A bounded history keeps the newest events.
    torch.openreg.memory._record_memory_history(max_entries=3, context=None, stacks="python",
                                                clear_history=True)
    for _ in range(5):
        torch.empty(100, device="openreg")
    trace = torch.openreg.memory._snapshot()["device_traces"][torch.openreg.current_device()]
    assert len(trace) == 3 and all(e["frames"] == [] for e in trace)
    assert trace[-1]["action"] == "free_completed"

    # C++ frames with stacks="all".
    torch.openreg.memory._record_memory_history(stacks="all", clear_history=True)
    torch.empty(100, device="openreg")
    frames = torch.openreg.memory._snapshot()["device_traces"][0][0]["frames"]
    assert any(f["filename"] == __file__ for f in frames)
    assert any("OpenRegDeviceAllocator" in f["filename"] or "openreg" in f["name"]
               for f in frames), [f["name"] for f in frames][:20]

    # Backward runs on autograd's device thread, which holds no GIL: recorded, no stack
    # waits for it.
    weight = torch.ones(64, 64, device="openreg", requires_grad=True)
    (weight * 3).sum().backward()
    assert torch.equal(weight.grad.cpu(), torch.full((64, 64), 3.0))

    for bad, message in [({"enabled": "some"}, "enabled must be"),
                         ({"context": "every"}, "context must be"),
                         ({"stacks": "cpp"}, "stacks must be"),
                         ({"max_entries": 0}, "max_entries must be")]:
        with pytest.raises(ValueError, match=message):
            torch.openreg.memory._record_memory_history(**bad)
    with pytest.raises(ValueError, match="Invalid openreg device index"):
        torch.openreg.memory._record_memory_history(device=99)


def test_memory_fraction_limits_the_process():
    device = torch.openreg.current_device()
    assert torch.openreg.get_per_process_memory_fraction() == 1.0
    _, total = torch.openreg.mem_get_info(device)
    fraction = 16 * MiB / total
    torch.openreg.empty_cache()
    torch.openreg.set_per_process_memory_fraction(fraction, device)
    try:
        assert torch.openreg.memory.get_per_process_memory_fraction(device) == fraction
        fits = torch.empty(12 * MiB, dtype=torch.uint8, device="openreg")
        ooms = torch.openreg.memory_stats(device)["num_ooms"]
        with pytest.raises(torch.OutOfMemoryError,
                           match=re.escape(f"set_per_process_memory_fraction({fraction})")):
            torch.empty(8 * MiB, dtype=torch.uint8, device="openreg")
        assert torch.openreg.memory_stats(device)["num_ooms"] == ooms + 1
        del fits
        # Cached memory counts, but is given back before the limit is enforced. 14 MiB
        # (a size class of its own) leaves room for small blocks earlier tests keep.
        again = torch.empty(14 * MiB, dtype=torch.uint8, device="openreg")
        del again
    finally:
        torch.openreg.set_per_process_memory_fraction(1.0, device)
    big = torch.empty(32 * MiB, dtype=torch.uint8, device="openreg")  # no limit any more
    del big

    for bad in (1.5, -0.1, math.nan):
        with pytest.raises(ValueError, match="must be in \\[0, 1\\]"):
            torch.openreg.set_per_process_memory_fraction(bad)
    for bad in ("0.5", True, None):
        with pytest.raises(TypeError, match="fraction must be a float"):
            torch.openreg.set_per_process_memory_fraction(bad)
    with pytest.raises(ValueError, match="Invalid openreg device index 7"):
        torch.openreg.set_per_process_memory_fraction(0.5, 7)
    with pytest.raises(ValueError, match="Expected an openreg device"):
        torch.openreg.get_per_process_memory_fraction("cpu")


def test_memory_summary_is_a_table_of_the_statistics():
    kept = torch.empty(2 * MiB, dtype=torch.uint8, device="openreg:1")
    summary = torch.openreg.memory_summary(1)
    assert "openreg memory summary, device openreg:1" in summary
    allocated = torch.openreg.memory_allocated(1) // 1024
    row = next(line for line in summary.splitlines() if "Allocated memory" in line)
    assert re.search(rf"\|\s+{allocated} KiB \|", row), row
    assert "from large pool" in summary
    assert "from large pool" not in torch.openreg.memory_summary(1, abbreviated=True)
    assert len({len(line) for line in summary.splitlines()}) == 1  # aligned
    del kept
    nested = torch.openreg.memory_stats_as_nested_dict(1)
    assert nested["allocated_bytes"]["all"]["current"] == torch.openreg.memory_allocated(1)


def test_profile_memory_records_openreg_allocations():
    torch.openreg.empty_cache()
    x = torch.ones(256, 1024, device="openreg")  # warm the path, outside the profile
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        y = torch.ones(512, 1024, device="openreg")
        z = y.sum()
        del y
    averages = {e.key: e for e in prof.key_averages()}
    ones = averages["aten::ones"]
    # ones allocates through its child aten::empty; sum's 0-dim result takes one
    # 512-byte block, allocated by sum itself (a structured kernel allocates its output
    # directly, as CUDA's do); deleting y frees its block outside any operator.
    assert ones.device_memory_usage == 2 * MiB and ones.self_device_memory_usage == 0
    assert averages["aten::sum"].device_memory_usage == 512
    assert averages["aten::sum"].self_device_memory_usage == 512
    assert averages["aten::empty"].self_device_memory_usage == 2 * MiB
    assert ones.cpu_memory_usage == 0
    freed = averages["[memory]"]
    assert freed.device_memory_usage == -2 * MiB
    del x, z
    # The table has device memory columns when the device activity is on (use_device).
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1],
                 profile_memory=True) as prof:
        torch.ones(512, 1024, device="openreg")
    table = prof.key_averages().table(sort_by="self_device_memory_usage", row_limit=3)
    assert "Self OPENREG Mem" in table
    assert re.search(r"aten::empty .* 2\.00 MB +2\.00 MB +1 *$", table, re.MULTILINE), table


def test_mem_pool_is_not_available_and_says_why():
    with pytest.raises(NotImplementedError, match="no device-generic MemPool"):
        torch.openreg.MemPool()
    with pytest.raises(NotImplementedError, match="PrivateUse1"):
        torch.openreg.use_mem_pool(None)


def test_every_accelerator_memory_function_works_on_openreg():
    memory = torch.accelerator.memory
    assert torch.accelerator.current_accelerator().type == "openreg"
    kept = torch.empty(MiB, dtype=torch.uint8, device="openreg:1")
    checked = set()

    def check(name, *args):
        checked.add(name)
        return getattr(memory, name)(*args)

    assert check("memory_allocated", 1) == torch.openreg.memory_allocated(1) >= MiB
    assert check("memory_reserved", 1) == torch.openreg.memory_reserved(1)
    assert check("max_memory_allocated", "openreg:1") >= MiB
    assert check("max_memory_reserved", torch.device("openreg:1")) >= MiB
    assert check("memory_stats", 1)["allocation.all.current"] >= 1
    assert check("get_memory_info", 1) == torch.openreg.mem_get_info(1)
    check("reset_peak_memory_stats", 1)
    assert memory.max_memory_allocated(1) == memory.memory_allocated(1)
    check("reset_accumulated_memory_stats", 1)
    assert memory.memory_stats(1)["allocation.all.allocated"] == 0
    del kept
    check("empty_cache")
    assert memory.memory_reserved(1) == memory.memory_allocated(1)  # nothing cached
    pinned = torch.empty(4096, pin_memory=True)
    del pinned
    assert torch.openreg.host_memory_stats()["allocated_bytes.current"] > 0
    check("empty_host_cache")
    assert torch.openreg.host_memory_stats()["allocated_bytes.current"] == 0
    assert checked == set(memory.__all__)
