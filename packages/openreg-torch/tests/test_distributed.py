"""torch.distributed on openreg: the "orccl" backend, checked by two worker processes.

The checks themselves live in distributed_worker.py; both ranks run each one and compare
openreg results with a CPU reference. One pair of workers serves the whole module
(starting a process costs seconds; a check costs milliseconds). Every check has a
deadline: past it both workers are killed, the test fails with their output, and the
next test starts a fresh pair.
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("distributed_worker.py")
WORLD_SIZE = 2


def free_ports(count: int) -> list[int]:
    """Ports free now, drawn below Linux's ephemeral range (32768 and up). A port the
    kernel handed out for bind(0) and released is soon handed out again, often as the
    local end of some outgoing connection (gloo opens many), which would take it from the
    store a worker is about to open on it; this range is only given to explicit binds."""
    ports: list[int] = []
    while len(ports) < count:
        port = random.randrange(20000, 32768)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        if port not in ports:
            ports.append(port)
    return ports


class WorkerPair:
    """Worker processes (ranks 0 and 1, or `world_size` ranks) answering check requests;
    each process has as many openreg devices as there are ranks and works on the one of
    its rank."""

    def __init__(self, world_size: int = WORLD_SIZE) -> None:
        self.world_size = world_size
        self.procs: list[subprocess.Popen] = []
        self.logs: list = []

    def start(self) -> None:
        env = dict(os.environ, GLOO_SOCKET_IFNAME="lo",
                   OPENREG_DEVICE_COUNT=str(self.world_size), PYTHONUNBUFFERED="1")
        for rank in range(self.world_size):
            log = tempfile.TemporaryFile(mode="w+")
            proc = subprocess.Popen(
                [sys.executable, str(WORKER), str(rank), str(self.world_size)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
                env=env, start_new_session=True,
            )
            self.procs.append(proc)
            self.logs.append(log)

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        for log in self.logs:
            log.close()
        self.procs, self.logs = [], []

    def output(self, tail: int = 4000) -> str:
        texts = []
        for rank, log in enumerate(self.logs):
            log.seek(0)
            texts.append(f"--- rank {rank} stderr (tail) ---\n{log.read()[-tail:]}")
        return "\n".join(texts)

    def stacks(self) -> str:
        """The output after each live worker wrote every thread's Python stack to it
        (faulthandler, on SIGUSR1): what a timed-out check was doing. Waits at most 5 s."""
        live = [(proc, log) for proc, log in zip(self.procs, self.logs) if proc.poll() is None]
        for proc, _ in live:
            os.kill(proc.pid, signal.SIGUSR1)
        deadline = time.monotonic() + 5.0
        for _, log in live:
            while time.monotonic() < deadline:
                log.seek(0)
                if "most recent call first" in log.read():
                    break
                time.sleep(0.05)
        return self.output(tail=12000)

    def send(self, check: str, args: dict) -> None:
        if not self.procs:
            self.start()
        request = json.dumps({"check": check, "ports": free_ports(4), "args": args}) + "\n"
        for proc in self.procs:
            proc.stdin.write(request)
            proc.stdin.flush()

    def receive(self, proc: subprocess.Popen, deadline: float):
        """The reply of one worker, "exited" or "timed out"."""
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return "timed out"
        line = proc.stdout.readline()
        return json.loads(line) if line else "exited"

    def run(self, check: str, timeout: float = 60.0, **args) -> None:
        """Runs a check on both ranks; fails the test unless both pass within `timeout`."""
        self.send(check, args)
        deadline = time.monotonic() + timeout
        replies = []
        for rank, proc in enumerate(self.procs):
            reply = self.receive(proc, deadline)
            if isinstance(reply, str):
                output = self.stacks() if reply == "timed out" else self.output()
                self.stop()
                pytest.fail(f"check {check!r}: rank {rank} {reply} ({timeout}s)\n{output}")
            replies.append(reply)
        errors = [
            f"--- rank {rank} ---\n{reply['error']}"
            for rank, reply in enumerate(replies) if not reply["ok"]
        ]
        if errors:
            pytest.fail(f"check {check!r} failed\n" + "\n".join(errors))

    def outcomes(self, check: str, timeout: float = 60.0, **args) -> list[str]:
        """Per rank: "ok", "failed: <error>", "exited" or "timed out" (a dead rank's
        process is reaped before its outcome is reported)."""
        self.send(check, args)
        deadline = time.monotonic() + timeout
        results = []
        for proc in self.procs:
            reply = self.receive(proc, deadline)
            if reply == "exited":
                proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            results.append(reply if isinstance(reply, str)
                           else "ok" if reply["ok"] else f"failed: {reply['error']}")
        return results


@pytest.fixture(scope="module")
def workers():
    pair = WorkerPair()
    yield pair
    pair.stop()


# --------------------------------------------------------------------- registration


def test_registered(workers):
    workers.run("registered")


def test_init_process_group_without_backend(workers):
    workers.run("init_default")


def test_init_process_group_with_device_id(workers):
    workers.run("init_device_id")


def test_init_process_group_by_name(workers):
    workers.run("init_named")


def test_init_process_group_device_backend_pairs(workers):
    workers.run("init_pair")


def test_cpu_only_groups_unchanged(workers):
    workers.run("cpu_only_groups")


def test_detail_debug_mode_keeps_cpu_collectives(workers):
    workers.run("detail_debug_keeps_cpu_collectives")


def test_gloo_group_serves_openreg_tensors(workers):
    workers.run("gloo_serves_openreg_tensors")


def test_new_group_leaving_out_a_rank_of_a_bound_group(workers):
    workers.run("new_group_leaving_out_a_rank_of_a_bound_group")


def test_new_group(workers):
    workers.run("new_group")


def test_split_group_of_a_bound_group(workers):
    workers.run("split_group")


# ------------------------------------------------------------------ stream semantics


def test_collective_follows_its_stream(workers):
    workers.run("stream_order")


def test_work_wait_future_and_completion(workers):
    workers.run("work_api")


def test_transport_keeps_no_python_objects(workers):
    workers.run("transport_keeps_no_python_objects")


def test_last_reference_dropped_while_a_callback_needs_the_gil(workers):
    workers.run("last_reference_dropped_during_a_callback", timeout=40.0)


# ------------------------------------------------------------------------ collectives


def test_all_reduce(workers):
    workers.run("all_reduce")


def test_broadcast_and_reduce(workers):
    workers.run("broadcast_and_reduce")


def test_all_gather(workers):
    workers.run("all_gather")


def test_gather_and_scatter(workers):
    workers.run("gather_scatter")


def test_reduce_scatter(workers):
    workers.run("reduce_scatter")


def test_all_to_all(workers):
    workers.run("all_to_all")


def test_send_recv(workers):
    workers.run("send_recv")


def test_coalesced(workers):
    workers.run("coalesced")


def test_object_collectives_on_openreg(workers):
    workers.run("object_collectives")


# -------------------------------------------------------------------------------- DDP

DDP_VARIANTS = ["default", "small_buckets", "bucket_views", "fp16_hook", "bf16_hook",
                "no_sync", "find_unused", "static_graph", "device_ids"]


@pytest.mark.parametrize("variant", DDP_VARIANTS)
def test_ddp_matches_cpu(workers, variant):
    workers.run("ddp", variant=variant)


def test_sync_batch_norm_matches_one_cpu_batch_norm(workers):
    workers.run("sync_batch_norm")


# ------------------------------------------------------------ DTensor, TP, FSDP2, DCP


def test_dtensor_and_tensor_parallel(workers):
    workers.run("dtensor_tp")


@pytest.mark.parametrize("mixed_precision", [False, True])
@pytest.mark.parametrize("reshard", [True, False])
def test_fsdp2_matches_cpu(workers, mixed_precision, reshard):
    workers.run("fsdp2", mixed_precision=mixed_precision, reshard=reshard)


def test_distributed_checkpoint(workers, tmp_path):
    workers.run("checkpoint", path=str(tmp_path / "checkpoint"))


def test_2d_mesh_on_four_processes():
    group = WorkerPair(world_size=4)
    try:
        group.run("mesh_2d", timeout=120)
    finally:
        group.stop()


# -------------------------------------------------------------------------- bad input


def test_tensor_on_wrong_device(workers):
    workers.run("wrong_device")


def test_mismatch_between_ranks_detected_in_debug_mode(workers):
    workers.run("mismatch_detected")


def test_mismatch_between_ranks_ends_in_bounded_time():
    """Without the debug checker: as with gloo on CPU tensors, the rank that receives too
    many bytes is aborted by gloo with its "collective mismatch" message and the other
    raises; neither hangs. Its own pair of workers, since one of them dies."""
    pair = WorkerPair()
    try:
        outcomes = pair.outcomes("mismatch_unchecked", timeout=60)
    finally:
        output = pair.output()
        pair.stop()
    assert outcomes[0] == "exited" and outcomes[1] == "ok", (outcomes, output)
    assert "collective mismatch" in output, output


def test_rank_exiting_mid_training_is_an_error_for_the_others():
    pair = WorkerPair()
    try:
        outcomes = pair.outcomes("peer_exits", timeout=60)
    finally:
        output = pair.output()
        pair.stop()
    assert outcomes == ["ok", "exited"], (outcomes, output)


def test_collectives_after_destroy(workers):
    workers.run("after_destroy")


def test_collective_in_a_forked_child_is_a_clear_error(workers):
    workers.run("forked_child")
