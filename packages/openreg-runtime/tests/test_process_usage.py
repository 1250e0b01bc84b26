"""Per-process device memory for openreg-smi (orGetProcessUsage): what live processes
hold, updated on allocation and free, and cleaned up when a process exits or dies. Each
test publishes into its own OPENREG_USAGE_DIR, so other processes do not show."""

import json
import os
import signal
import struct
import sys

import openreg_runtime as rt
from runtime_helpers import Peer, run_process

KiB = 1024
MiB = 1024 * KiB

# Allocates the sizes given per device, reports, then frees on "free" and exits at EOF.
HOLDER = """
import sys
import openreg_runtime as rt
sizes = [int(size) for size in sys.argv[1:]]
held = []
for device, size in enumerate(sizes):
    rt.set_device(device)
    if size:
        held.append(rt.malloc(size))
print("ready", flush=True)
for line in sys.stdin:
    if line.strip() == "free":
        for pointer in held:
            rt.free(pointer)
        held.clear()
        print("freed", flush=True)
"""


def usage_of(pid: int):
    return {entry.pid: entry for entry in rt.process_usage()}.get(pid)


def test_live_processes_are_listed_and_dead_ones_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENREG_USAGE_DIR", str(tmp_path))
    assert rt.process_usage() == []  # nothing published yet (the directory does not exist)
    code_a = HOLDER.replace("sys.argv[1:]", repr([str(3 * MiB), "0"]))
    code_b = HOLDER.replace("sys.argv[1:]", repr([str(512), str(2 * MiB + 512)]))
    with Peer(code_a, {"OPENREG_USAGE_DIR": str(tmp_path)}, timeout=30) as a, \
            Peer(code_b, {"OPENREG_USAGE_DIR": str(tmp_path)}, timeout=30) as b:
        assert a.recv() == "ready" and b.recv() == "ready"
        usage_a, usage_b = usage_of(a.proc.pid), usage_of(b.proc.pid)
        assert usage_a.used_bytes == [3 * MiB, 0]
        assert usage_b.used_bytes == [512, 2 * MiB + 512]
        assert usage_a.device_memory == rt.get_device_properties(0).total_memory

        # The command-line tool sees the same (it needs no torch).
        shown = run_process([sys.executable, "-m", "openreg_runtime.smi", "--json"],
                            {"OPENREG_USAGE_DIR": str(tmp_path)}, timeout=60)
        assert shown.returncode == 0, shown.stderr
        state = json.loads(shown.stdout)
        by_pid = {p["pid"]: p for p in state["processes"]}
        assert by_pid[a.proc.pid]["used_bytes"] == [3 * MiB, 0]
        assert by_pid[b.proc.pid]["total_used"] == 2 * MiB + 1024
        assert state["devices"][0]["used_memory"] == 3 * MiB + 512
        assert state["devices"][1]["processes"] == 1

        # A free is published at once.
        a.send("free")
        assert a.recv() == "freed"
        assert usage_of(a.proc.pid).used_bytes == [0, 0]

        # A process killed outright leaves its file; the next listing removes it.
        record = tmp_path / str(b.proc.pid)
        b.proc.send_signal(signal.SIGKILL)
        b.proc.wait(timeout=30)
        assert record.exists()
        assert usage_of(b.proc.pid) is None
        assert not record.exists()

        # A process that exits removes its own file.
        a.finish()
        assert not (tmp_path / str(a.proc.pid)).exists()
    assert rt.process_usage() == []


def test_record_of_a_reused_pid_is_removed(tmp_path, monkeypatch):
    # A live pid (ours) with a start time that is not its own: a process that died and
    # whose pid was given to another one.
    monkeypatch.setenv("OPENREG_USAGE_DIR", str(tmp_path))
    used = [0] * 64
    used[0] = 4096
    stale = struct.pack("<IIiiQQ64Q", 0x4D53524F, 1, os.getpid(), 2, 8 << 30, 1, *used)
    (tmp_path / str(os.getpid())).write_bytes(stale.ljust(4096, b"\0"))
    (tmp_path / "notes.txt").write_text("not a record")  # ignored, left alone
    assert rt.process_usage() == []
    assert not (tmp_path / str(os.getpid())).exists()
    assert (tmp_path / "notes.txt").exists()


def test_unwritable_usage_directory_does_not_break_allocation(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")
    out = run_process([sys.executable, "-c", "import openreg_runtime as rt; "
                       "p = rt.malloc(4096); rt.free(p); print(rt.process_usage())"],
                      {"OPENREG_USAGE_DIR": str(blocked / "below-a-file")}, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
