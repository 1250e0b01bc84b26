"""The distributed scripts of the tree run: examples/ddp.py under torchrun (two processes,
one openreg device each, DDP over orccl) and benchmarks/distributed.py (figures not
asserted: they depend on the machine and its load)."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_all(commands: list[list[str]], timeout: float = 180) -> list[str]:
    """Runs `commands` side by side (loopback only) and returns their outputs; past
    `timeout` kills every process they started."""
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, env=env, start_new_session=True)
             for command in commands]
    deadline = time.monotonic() + timeout
    outputs = []
    try:
        for proc in procs:
            output, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            outputs.append(output)
    except subprocess.TimeoutExpired:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        tails = [proc.communicate()[0][-3000:] for proc in procs]
        raise AssertionError(f"not finished in {timeout} s:\n" + "\n".join(tails)) from None
    for proc, output in zip(procs, outputs):
        assert proc.returncode == 0, output[-4000:]
    return outputs


def run(command: list[str], timeout: float = 180) -> str:
    return run_all([command], timeout)[0]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_ddp_example_under_torchrun():
    output = run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                  "--nproc-per-node=2", str(ROOT / "examples" / "ddp.py"), "--steps", "10"])
    assert "rank 0 on openreg:0" in output and "rank 1 on openreg:1" in output, output
    assert "DDP on 2 openreg devices matches one CPU process" in output, output


def test_ddp_example_on_two_simulated_nodes():
    """Two torchrun agents (two "nodes", one process and device each) meet through c10d
    rendezvous on loopback and train one model together."""
    endpoint = f"127.0.0.1:{free_port()}"
    commands = [
        [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", f"--node-rank={node}",
         "--nproc-per-node=1", "--rdzv-backend=c10d", f"--rdzv-endpoint={endpoint}",
         "--rdzv-id=openreg-two-nodes", str(ROOT / "examples" / "ddp.py"), "--steps", "10"]
        for node in range(2)
    ]
    output = "\n".join(run_all(commands))
    assert "rank 0 on openreg:0" in output and "rank 1 on openreg:0" in output, output
    assert "DDP on 2 openreg devices matches one CPU process" in output, output


def test_distributed_benchmark_runs():
    output = run([sys.executable, str(ROOT / "benchmarks" / "distributed.py"), "--reps", "1"])
    for row in ("all_reduce 4 KiB", "all_reduce 64 MiB", "DDP MLP step"):
        assert any(line.strip().startswith(row) for line in output.splitlines()), output
