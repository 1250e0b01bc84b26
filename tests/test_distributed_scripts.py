"""The distributed scripts of the tree run: examples/ddp.py under torchrun (two processes,
one openreg device each, DDP over orccl) and benchmarks/distributed.py (figures not
asserted: they depend on the machine and its load)."""

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(command: list[str], timeout: float = 180) -> str:
    """Runs `command` (loopback only), killing its whole process group past `timeout`."""
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        raise AssertionError(f"not finished in {timeout} s:\n{output[-4000:]}") from None
    assert proc.returncode == 0, output[-4000:]
    return output


def test_ddp_example_under_torchrun():
    output = run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                  "--nproc-per-node=2", str(ROOT / "examples" / "ddp.py"), "--steps", "10"])
    assert "rank 0 on openreg:0" in output and "rank 1 on openreg:1" in output, output
    assert "DDP on 2 openreg devices matches one CPU process" in output, output


def test_distributed_benchmark_runs():
    output = run([sys.executable, str(ROOT / "benchmarks" / "distributed.py"), "--reps", "1"])
    for size in ("4 KiB", "64 MiB"):
        assert any(line.strip().startswith(size) for line in output.splitlines()), output
