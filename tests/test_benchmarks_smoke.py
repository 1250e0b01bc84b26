"""Smoke test of benchmarks/run.py: it runs, exits 0 and writes the JSON it promises.

Ratios are not asserted: they depend on the machine and its load.
"""

import json
import math
import sys
from pathlib import Path

import pytest

from openreg_torch.testing import run_process

RUN = Path(__file__).resolve().parents[1] / "benchmarks" / "run.py"
# One in-process row of each kind, the row measured in two worker processes, and a context row
# (no target: shown, not judged).
WORKLOADS = ["add_1elem", "empty_cached", "mul_add_1", "cpu_autoload_overhead",
             "dataloader_pinning_only"]
CONTEXT = {"dataloader_pinning_only"}


def test_quick_run_writes_results(tmp_path):
    proc = run_process(
        [sys.executable, RUN, "--quick", "--only", ",".join(WORKLOADS), "--results-dir", tmp_path],
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in WORKLOADS:
        assert name in proc.stdout

    latest = tmp_path / "latest.json"
    assert latest.is_file()
    stamped = [p for p in tmp_path.glob("*.json") if p.name != "latest.json"]
    assert len(stamped) == 1
    result = json.loads(latest.read_text())
    assert result == json.loads(stamped[0].read_text())

    for key in ("timestamp", "fallback_mode", "quick", "torch_version", "malloc_env",
                "geomean_ratio", "all_correct", "workloads"):
        assert key in result, key
    assert result["quick"] is True
    assert result["all_correct"] is True
    assert result["fallback_mode"]
    # run.py re-executes itself so that glibc keeps its memory on the CPU side.
    assert all(v is not None for v in result["malloc_env"].values())

    assert [w["name"] for w in result["workloads"]] == WORKLOADS
    for w in result["workloads"]:
        for key in ("target", "cpu_median_s", "device_median_s", "ratio", "correct",
                    "cpu_times_s", "device_times_s"):
            assert key in w, (w["name"], key)
        assert w["correct"] is True and w["error"] is None
        assert w["cpu_median_s"] > 0 and w["device_median_s"] > 0
        assert len(w["cpu_times_s"]) == len(w["device_times_s"]) > 0
        # Judged rows say whether they met their target; context rows are not judged.
        assert (w["target"] is None) == (w["name"] in CONTEXT)
        assert ("met" in w) == (w["target"] is not None), w["name"]

    judged = [w["ratio"] for w in result["workloads"] if w["target"] is not None]
    assert result["geomean_ratio"] == pytest.approx(
        math.exp(sum(map(math.log, judged)) / len(judged)))


def test_unknown_workload_is_rejected(tmp_path):
    proc = run_process(
        [sys.executable, RUN, "--only", "no_such_workload", "--results-dir", tmp_path],
        timeout=120,
    )
    assert proc.returncode == 2
    assert "no_such_workload" in proc.stderr
    assert not list(tmp_path.iterdir())


def _load_run_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("benchmarks_run", RUN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("differ_on_one_thread", [False, True])
def test_a_mismatch_is_checked_again_on_one_thread(differ_on_one_thread):
    import torch

    run = _load_run_module()
    sys.path.insert(0, str(RUN.parent))
    try:
        from workloads import Case, Workload
    finally:
        sys.path.remove(str(RUN.parent))

    def build(device, quick):
        value = torch.zeros(4)

        def step():
            # What the CPU's multithreaded kernels do now and then: another last bit.
            wobble = device.type != "cpu" and (differ_on_one_thread
                                               or torch.get_num_threads() > 1)
            value.add_(1.0 + (1e-3 if wobble else 0.0))

        return Case(run=step, result=lambda: value.to(device))

    workload = Workload("thread_sensitive", "test double", 1.0, build, reps=1)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        record = run.run_workload(workload, torch.device("openreg"), quick=True,
                                  reps_override=1)
    finally:
        torch.set_num_threads(threads)
    assert record["error"] is None
    assert "Mismatched elements: 4 / 4" in record["mismatch"]
    if differ_on_one_thread:
        assert record["correct"] is False and "note" not in record
    else:
        assert record["correct"] is True
        assert "matched on one thread" in record["note"]
