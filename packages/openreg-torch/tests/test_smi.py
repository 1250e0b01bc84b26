"""openreg-smi, the console script openreg-torch installs: this test process's openreg
memory as the tool reports it, the table, --watch (bounded, and Ctrl-C ends it
cleanly) and bad arguments. Live and dead processes: the runtime's
tests/test_process_usage.py."""

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import torch
from openreg_torch.testing import child_env, run_process

SMI = Path(sys.executable).parent / "openreg-smi"
MiB = 1 << 20


def smi(*args):
    result = run_process([SMI, *args], timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def held_by_this_process():
    state = json.loads(smi("--json"))
    mine = [p for p in state["processes"] if p["pid"] == os.getpid()]
    return state, (mine[0]["used_bytes"] if mine else [0] * len(state["devices"]))


def test_smi_reports_this_process_device_memory():
    torch.openreg.empty_cache()
    torch.empty(1, device="openreg:1")  # this process has published at least once
    _, before = held_by_this_process()
    kept = torch.empty(4 * MiB, dtype=torch.uint8, device="openreg:1")  # a new segment
    state, after = held_by_this_process()
    assert after[1] == before[1] + 4 * MiB
    assert after[0] == before[0]
    mine = next(p for p in state["processes"] if p["pid"] == os.getpid())
    assert "pytest" in mine["command"] or "python" in mine["command"]
    device = state["devices"][1]
    assert device["total_memory"] == torch.openreg.mem_get_info(1)[1]
    assert device["used_memory"] >= after[1] and device["processes"] >= 1

    table = smi()
    assert "Processes:" in table and "Memory-Usage" in table
    assert any(line.split()[1:3] == [str(os.getpid()), "1"] for line in table.splitlines()
               if line.startswith("|") and len(line.split()) > 3)
    del kept


def test_watch_is_bounded_and_ends_cleanly_on_ctrl_c():
    assert smi("--watch", "0.1", "--count", "2").count("Processes:") == 2
    for bad in (["--watch", "0"], ["--count", "2"], ["--watch", "1", "--count", "0"]):
        result = run_process([SMI, *bad], timeout=60)
        assert result.returncode == 2 and "openreg-smi: error:" in result.stderr

    process = subprocess.Popen([SMI, "--watch", "0.2"], env=child_env(), text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
    try:
        # Wait (bounded) for the first table: it is printed in one flushed write.
        ready, _, _ = select.select([process.stdout], [], [], 30)
        assert ready and "Processes:" in os.read(process.stdout.fileno(), 1 << 16).decode()
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
        assert process.returncode == 0 and "Traceback" not in stderr, stderr
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
