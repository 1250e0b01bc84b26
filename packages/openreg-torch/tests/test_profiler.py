"""torch.profiler sees openreg's device work (docs/profiling.md).

The profiling runs in one fresh interpreter: the profiler's state is process-wide, its
warnings go to the process's stderr (which must hold no internal assert), and the first
profile of a process pays seconds of PyTorch's own start-up, once for all the checks.
"""

import json
import sys
import tempfile
from pathlib import Path

import pytest

from openreg_torch.testing import run_process

ROOT = Path(__file__).resolve().parents[3]

# A training step and an event record on a second stream, under torch.profiler with the
# PrivateUse1 (openreg) activity; then the legacy profiler; then the example script.
# Prints what the tests check as JSON, one line per part.
SCRIPT = """
import json, os, sys, tempfile
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function
from torch.autograd import DeviceType
import openreg_torch._C as C

device = torch.device("openreg", 0)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
inputs, targets = torch.randn(32, 8), torch.randn(32, 1)

def step():
    x, y = inputs.to(device), targets.to(device)
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.detach().cpu()

step()
side = torch.openreg.Stream()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
    with record_function("train_step"):
        step()
    with torch.openreg.stream(side):
        doubled = model[0].weight * 2
        event = torch.openreg.Event()
        event.record()
    event.synchronize()

# No observer is left behind: the launch point is unobserved again.
C._start_device_work_log()
C._stop_device_work_log()

device_events = [e for e in prof.events() if e.device_type == DeviceType.PrivateUse1]
# CPU operators (runtime events share their operator's id but link to it).
cpu_ops = {e.id: e for e in prof.events()
           if e.device_type == DeviceType.CPU and e.linked_correlation_id == 0}
trace = os.path.join(tempfile.mkdtemp(), "trace.json")
prof.export_chrome_trace(trace)
with open(trace) as f:
    chrome = json.load(f)["traceEvents"]
averages = {a.key: a for a in prof.key_averages()}
print(json.dumps({
    "device": [{"name": e.name, "us": e.time_range.elapsed_us(), "device": e.device_index,
                "linked": e.linked_correlation_id,
                "cpu_op": getattr(cpu_ops.get(e.linked_correlation_id), "name", None)}
               for e in device_events],
    "kernels_of_cpu_ops": sorted({(e.name, k.name) for e in prof.events() for k in e.kernels}),
    # Each runtime event with the operator it is correlated with (event records: the
    # scope they were recorded in), and launches or copies whose times do not overlap
    # their operator's. (Launches are not placed by cpu_parent: that nests by time across
    # two clocks, the runtime events' system clock and PyTorch's calibrated TSC clock,
    # which agree only to some tens of ns, and a launch may end that close to its
    # operator's end.)
    "runtime": sorted({(e.name, getattr(cpu_ops.get(e.linked_correlation_id), "name", "")
                        if e.name != "orEventRecord" else getattr(e.cpu_parent, "name", ""))
                       for e in prof.events()
                       if e.name in ("orLaunchKernel", "orMemcpyAsync", "orEventRecord")}),
    "runtime_outside_operator": [
        e.name for e in prof.events()
        if e.name in ("orLaunchKernel", "orMemcpyAsync") and e.linked_correlation_id in cpu_ops
        and not (e.time_range.start < cpu_ops[e.linked_correlation_id].time_range.end
                 and cpu_ops[e.linked_correlation_id].time_range.start < e.time_range.end)],
    "averages": {k: [a.device_time_total, a.self_device_time_total]
                 for k, a in averages.items()},
    "chrome": [{k: e.get(k) for k in ("ph", "cat", "name", "pid", "tid", "dur", "args")}
               for e in chrome],
    "side_stream": side.stream_id,
}))

# The legacy profiler with use_device="openreg" (per-operator device time from timed
# events), and a CPU-only profile of openreg work.
x = torch.randn(64, 64, device="openreg")
with torch.autograd.profiler.profile(use_device="openreg") as legacy:
    (x @ x).relu().sum().cpu()
with profile(activities=[ProfilerActivity.CPU]) as cpu_only:
    (x @ x).sum().cpu()
# Another observer of the launch point (the device work log) keeps it: the profiler
# warns and records no device activity.
C._start_device_work_log()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as observed:
    (x + 1).cpu()
logged = C._stop_device_work_log()
rows = {a.key: a for a in legacy.key_averages()}
print(json.dumps({
    "observed_device_events": sum(1 for e in observed.events() if e.device_type.name != "CPU"),
    "logged": [kind for kind, _, _, _ in logged],
    "legacy": {k: [a.cpu_time_total, a.device_time_total] for k, a in rows.items()},
    "table": legacy.key_averages().table(),
    "cpu_only_device_events": sum(1 for e in cpu_only.events()
                                  if e.device_type.name != "CPU" or e.name.startswith("or")),
}))

# The example: a schedule, record_function and tensorboard_trace_handler.
import runpy
example = runpy.run_path(sys.argv[1])
trace_dir = tempfile.mkdtemp()
prof = example["train"](4, trace_dir)
traces = [os.path.join(trace_dir, name) for name in os.listdir(trace_dir)]
print(json.dumps({
    "traces": [json.load(open(path))["traceEvents"] for path in traces],
    "table": prof.key_averages().table(sort_by="device_time_total", row_limit=5),
}))
"""

@pytest.fixture(scope="module")
def reports():
    """The three JSON reports of SCRIPT, then its stderr."""
    with tempfile.TemporaryDirectory(prefix="openreg-test-") as directory:
        script = Path(directory, "script.py")
        script.write_text(SCRIPT)
        result = run_process([sys.executable, str(script),
                              str(ROOT / "examples" / "profile_training.py")], timeout=120)
    assert result.returncode == 0, result.stderr
    assert "INTERNAL ASSERT" not in result.stderr, result.stderr
    assert "kineto_ctx_ptr" not in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 3, result.stdout
    return [json.loads(line) for line in lines] + [result.stderr]


@pytest.fixture
def kineto_profile(reports):
    return reports[0], None


def test_kernels_and_copies_are_device_events_with_device_time(kineto_profile):
    report, _ = kineto_profile
    names = [e["name"] for e in report["device"]]
    assert "aten::addmm" in names and "Memcpy HtoD" in names and "Memcpy DtoH" in names, names
    kernels = [e for e in report["device"] if not e["name"].startswith(("Memcpy", "Event"))]
    assert kernels and all(e["us"] > 0 for e in kernels), kernels
    copies = [e for e in report["device"] if e["name"].startswith("Memcpy")]
    assert all(e["us"] >= 0 and e["device"] == 0 for e in copies), copies
    assert "Event Record" in names


def test_device_events_are_correlated_with_the_operator_that_launched_them(kineto_profile):
    report, _ = kineto_profile
    for event in report["device"]:
        if event["name"] == "Event Record":
            continue  # recorded from Python, outside any operator: nothing to link to
        assert event["linked"] > 0, event
        if event["name"] in ("aten::addmm", "aten::mm", "aten::relu", "aten::mse_loss"):
            # A kernel is named after its operator and linked to it.
            assert event["cpu_op"] == event["name"], event
        elif event["name"] == "Memcpy HtoD":
            # The innermost operator: the copy kernel under aten::to / aten::copy_.
            assert event["cpu_op"] == "aten::_copy_from", event
    assert ["aten::addmm", "aten::addmm"] in report["kernels_of_cpu_ops"]
    # The host side of each launch: a runtime event correlated with the operator that
    # issued it, during that operator.
    runtime = report["runtime"]
    assert ["orLaunchKernel", "aten::addmm"] in runtime and ["orEventRecord", ""] in runtime
    assert ["orMemcpyAsync", "aten::_copy_from"] in runtime
    # (The autograd engine records events between operators; kernels and copies are
    # always issued by an operator.)
    assert all(op.startswith("aten::") for name, op in runtime
               if name != "orEventRecord"), runtime
    assert report["runtime_outside_operator"] == []


def test_key_averages_show_device_time(kineto_profile):
    report, _ = kineto_profile
    total, self_device = report["averages"]["aten::addmm"]
    assert total > 0 and self_device > 0
    # A composite operator's device time is that of the kernels below it.
    linear_total, linear_self = report["averages"]["aten::linear"]
    assert linear_total >= total and linear_self == 0
    assert report["averages"]["train_step"][0] > 0  # record_function ranges too


def test_chrome_trace_has_one_lane_per_openreg_stream(kineto_profile):
    report, _ = kineto_profile
    device_events = [e for e in report["chrome"]
                     if e["ph"] == "X" and e["cat"] in ("kernel", "gpu_memcpy")]
    assert device_events and all(e["pid"] == 0 and e["dur"] > 0 or e["cat"] == "gpu_memcpy"
                                 for e in device_events)
    lanes = {e["tid"] for e in device_events}
    assert {0, report["side_stream"]} <= lanes, lanes
    addmm = next(e for e in device_events if e["name"] == "aten::addmm")
    assert addmm["args"]["stream"] == 0 and addmm["args"]["device"] == 0
    copy = next(e for e in device_events if e["name"] == "Memcpy HtoD")
    assert copy["args"]["bytes"] == 32 * 8 * 4 and copy["args"]["kind"] == "HtoD"
    names = {(e["ph"], e["name"], (e.get("args") or {}).get("name"))
             for e in report["chrome"] if e["ph"] == "M"}
    assert ("M", "process_name", "openreg 0") in names
    assert ("M", "thread_name", "stream 0 (default)") in names
    assert ("M", "thread_name", f"stream {report['side_stream']}") in names
    # Flow arrows from each runtime event (CPU process) to its device work (device 0).
    starts = {e["pid"] for e in report["chrome"] if e["ph"] == "s" and e["cat"] == "ac2g"}
    ends = {e["pid"] for e in report["chrome"] if e["ph"] == "f" and e["cat"] == "ac2g"}
    assert starts and 0 not in starts and ends == {0}


def test_legacy_profiler_times_openreg_operators_without_asserts(reports):
    report = reports[1]
    assert "nan" not in report["table"].lower()
    cpu_total, device_total = report["legacy"]["aten::mm"]
    assert cpu_total > 0 and device_total > 0
    assert all(cpu >= 0 and device >= 0 for cpu, device in report["legacy"].values())
    # Without ProfilerActivity.PrivateUse1, openreg's launches are not observed.
    assert report["cpu_only_device_events"] == 0


def test_profiler_leaves_another_observer_in_place_with_a_warning(reports):
    report, stderr = reports[1], reports[3]
    assert "another observer of device work is installed" in stderr
    assert report["observed_device_events"] == 0
    assert report["logged"] == ["kernel", "copy"]  # the log saw the work, as before


def test_example_script_schedules_and_writes_tensorboard_traces(reports):
    report = reports[2]
    assert len(report["traces"]) == 1, report  # one active cycle of the schedule
    events = report["traces"][0]
    steps = [e for e in events if e.get("cat") == "user_annotation" and e["name"] == "train_step"]
    assert len(steps) == 2  # the two active steps, not the skipped and warm-up ones
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert len({e["tid"] for e in kernels}) >= 2  # the default stream and the side stream
    assert "Self OPENREG" in report["table"]  # PyTorch names the device columns by backend
