"""examples/ddp.py under torchrun: two processes, one openreg device each, DDP over orccl."""

import os
import signal
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "ddp.py"


def test_ddp_example_under_torchrun():
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node=2", str(EXAMPLE), "--steps", "10"]
    # Loopback only; one OpenMP thread per process, as torchrun would set anyway.
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        raise AssertionError(f"torchrun did not finish in 180 s:\n{output[-4000:]}") from None
    assert proc.returncode == 0, output[-4000:]
    assert "rank 0 on openreg:0" in output and "rank 1 on openreg:1" in output, output
    assert "DDP on 2 openreg devices matches one CPU process" in output, output
