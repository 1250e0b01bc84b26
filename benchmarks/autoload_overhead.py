"""Do-no-harm row: the CPU MLP step with openreg autoloaded vs not, in two processes.

Installing openreg must not slow CPU-only programs (DESIGN.md, "Do no harm"). Two worker
processes build the benchmark MLP on the CPU, one with ``TORCH_DEVICE_BACKEND_AUTOLOAD=1``
(``import torch`` loads openreg) and one with ``=0``. Both stay alive for the whole row and
take turns, driven over their stdin/stdout, so one is idle while the other is timed and
machine noise hits both alike, as in the in-process rows. The "cpu" side of the record is
the process without openreg, the "device" side the one with it.

Run as ``python autoload_overhead.py --worker``, this file is that worker.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
START_TIMEOUT_S = 180.0  # importing torch (and openreg) on a loaded 2-core machine
STEP_TIMEOUT_S = 120.0


def _worker() -> int:
    import torch

    sys.path.insert(0, str(HERE))
    from workloads import build_mlp

    case = build_mlp(torch.device("cpu"), quick=False)
    autoloaded = int("openreg_torch" in sys.modules)
    print(f"ready {autoloaded} {torch.get_num_threads()}", flush=True)
    for line in sys.stdin:
        cmd, *args = line.split()
        if cmd == "check":
            # One thread: with two, a CPU-only process without openreg gave different
            # parameters in 2 of 30 runs on a loaded machine (1 of 30 with MKL's strict
            # reproducible mode too), and 0 of 30 with one.
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                for _ in range(int(args[0])):
                    case.run()
            finally:
                torch.set_num_threads(threads)
            torch.save(case.result(), args[1])
            print("ok", flush=True)
        elif cmd == "time":
            n = int(args[0])
            t0 = time.perf_counter()
            for _ in range(n):
                case.run()
            print(repr((time.perf_counter() - t0) / n), flush=True)
        elif cmd == "quit":
            break
    return 0


class _Worker:
    """One worker process; every request has a timeout (a stuck worker is killed)."""

    def __init__(self, autoload: bool, log_dir: str) -> None:
        self.name = "autoload=" + ("1" if autoload else "0")
        env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="1" if autoload else "0")
        # MKL's GEMM results depend on the buffers' alignment unless its conditional numerical
        # reproducibility is on: without it, 2 of 40 CPU-only processes (openreg not loaded)
        # gave a different first-layer gradient under load, which failed the bit-for-bit check.
        # With it, two threads still varied: the check step in _worker runs on one.
        env.setdefault("MKL_CBWR", "AUTO")
        self.log = Path(log_dir) / f"{self.name}.log"
        with self.log.open("w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), "--worker"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                env=env)

    def reply(self, timeout: float) -> str:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.close()
            why = f"no reply within {timeout:.0f} s" if not ready else "exited"
            tail = self.log.read_text()[-1500:]
            raise RuntimeError(f"worker {self.name} {why}: {tail}")
        return line.strip()

    def ask(self, request: str, timeout: float = STEP_TIMEOUT_S) -> str:
        self.proc.stdin.write(request + "\n")
        self.proc.stdin.flush()
        return self.reply(timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(timeout=10)


def measure_autoload_overhead(quick: bool, reps: int, warmup: int, device_autoload: bool = True):
    """``device_autoload=False`` loads openreg in neither process (an A/A run): what the row
    measures between two identical processes, its noise floor on the machine."""
    import torch
    from workloads import Measured

    inner, check_steps = (1, 1) if quick else (4, 3)
    if quick:
        warmup = 0  # the check step has warmed both processes; start-up dominates anyway
    with tempfile.TemporaryDirectory(prefix="openreg-bench-") as tmp:
        workers = {"cpu": _Worker(False, tmp), "device": _Worker(device_autoload, tmp)}
        try:
            ready = {side: w.reply(START_TIMEOUT_S).split() for side, w in workers.items()}
            loaded = {side: r[1] for side, r in ready.items()}
            if loaded != {"cpu": "0", "device": str(int(device_autoload))}:
                raise RuntimeError(f"autoload did not do what the environment says: {loaded} "
                                   "(openreg_torch imported: 1)")
            if ready["cpu"][2] != ready["device"][2]:
                raise RuntimeError(f"thread counts differ: {ready}")

            # Correctness: the same steps in each process give the same loss and parameters,
            # bit for bit (both run the CPU kernels; openreg must not change them).
            results = {}
            for side, w in workers.items():
                path = os.path.join(tmp, f"{side}.pt")
                w.ask(f"check {check_steps} {path}")
                results[side] = torch.load(path)
            mismatch = None
            try:
                torch.testing.assert_close(results["device"], results["cpu"], rtol=0, atol=0)
            except AssertionError as exc:
                mismatch = str(exc).strip()[:2000]

            times = {"cpu": [], "device": []}
            for i in range(warmup + reps):
                order = ("cpu", "device") if i % 2 == 0 else ("device", "cpu")
                for side in order:
                    dt = float(workers[side].ask(f"time {inner}"))
                    if i >= warmup:
                        times[side].append(dt)
        finally:
            for w in workers.values():
                w.close()
    device_side = "autoload on" if device_autoload else "autoload off too (A/A)"
    return Measured(times=times, inner=inner, correct=mismatch is None, mismatch=mismatch,
                    note=f"CPU only: cpu = autoload off, device = {device_side}")


def measure_autoload_noise(quick: bool, reps: int, warmup: int):
    return measure_autoload_overhead(quick, reps, warmup, device_autoload=False)


if __name__ == "__main__" and sys.argv[1:] == ["--worker"]:
    sys.exit(_worker())
