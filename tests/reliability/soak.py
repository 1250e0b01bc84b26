"""A bounded multi-thread soak of openreg. test_soak.py runs it in a subprocess, so that a
crash or a hang is a test failure with this script's output rather than the end of pytest.

Each worker thread works on one device (openreg:0 and openreg:1 alternately) and mixes
allocations of random sizes, host<->device copies (pinned non_blocking and pageable),
copies between the devices, operators checked against the CPU, draws from its own seeded
generator checked against the same sequence on a CPU generator, device-wide synchronize,
and event record/wait across streams and devices, on a stream of its own or on the
default stream. At the end every statistic must be back where it started.

Environment:
  OPENREG_SOAK_SECONDS   how long the threads work (default 3)
  OPENREG_SOAK_THREADS   worker threads (default 6)
  OPENREG_SOAK_SEED      (default 0)
  OPENREG_SOAK_SHARED    1 (default): threads share streams, as programs do: the default
                         streams, and pool streams (torch.openreg.Stream() hands them out
                         round-robin from 32 per device); 0: every stream has one user
  OPENREG_SOAK_EMPTY_CACHE  1 (default): one more thread empties the caches throughout
  OPENREG_SOAK_STALL     seconds without any finished task that count as a hang (10)
Exit status: 0 all checks passed; 1 a check failed (printed); 3 hung (all stacks printed);
1 with "Timeout" and all stacks on stderr when a hang keeps even the main thread from
running (faulthandler's watchdog). Otherwise the last line of stdout is a JSON summary.
"""

import faulthandler
import gc
import json
import os
import random
import sys
import threading
import time
import traceback

import torch

openreg = torch.openreg

SECONDS = float(os.environ.get("OPENREG_SOAK_SECONDS", "3"))
THREADS = int(os.environ.get("OPENREG_SOAK_THREADS", "6"))
SEED = int(os.environ.get("OPENREG_SOAK_SEED", "0"))
SHARED = os.environ.get("OPENREG_SOAK_SHARED", "1") == "1"
EMPTY_CACHE = os.environ.get("OPENREG_SOAK_EMPTY_CACHE", "1") == "1"
# A task takes milliseconds: no thread finishing one for this long means a hang.
STALL = float(os.environ.get("OPENREG_SOAK_STALL", "10"))


def live_events() -> int:
    """How many runtime events exist (see live_events in test_leaks.py)."""
    made = []
    while True:
        event = openreg.Event()
        event.record()
        made.append(event)
        if event.event_id >> 32 == 1:
            return (event.event_id & 0xFFFFFFFF) - 1 - (len(made) - 1)


class Worker:
    def __init__(self, rank: int, deadline: float, failures: list, stop: threading.Event):
        self.rank, self.deadline, self.failures, self.stop = rank, deadline, failures, stop
        self.device, self.peer = rank % 2, 1 - rank % 2
        self.name = f"openreg:{self.device}"
        self.rng = random.Random(SEED * 1000 + rank)
        self.data = torch.Generator().manual_seed(SEED * 1000 + rank)  # CPU inputs
        # The checked pair: the device generator must draw exactly the CPU's sequence.
        self.on_device = torch.Generator(device=self.name).manual_seed(SEED + rank)
        self.on_cpu = torch.Generator().manual_seed(SEED + rank)
        # Without sharing, only workers 0 and 1 use their device's default stream, and
        # every other stream a worker uses is its own (the pool has 32 per device).
        self.uses_default = SHARED or rank < 2
        self.own, self.reader = openreg.Stream(self.device), openreg.Stream(self.device)
        self.peer_stream = openreg.Stream(self.peer)
        self.counts: dict[str, int] = {}
        self.done = 0  # tasks finished: the watchdog's sign of progress

    def size(self) -> int:
        return self.rng.choice([1, 7, 512, 4099, self.rng.randint(1, 1 << 16)])

    def host(self, n: int) -> torch.Tensor:
        return torch.randn(n, generator=self.data)

    def other_stream(self, device: int) -> torch.Stream:
        """A stream for a second queue of work: shared ones, or this thread's own."""
        if SHARED:
            return openreg.Stream(device=device) if self.rng.random() < 0.7 \
                else openreg.default_stream(device)
        return self.reader if device == self.device else self.peer_stream

    # ---------------------------------------------------------------------------- tasks
    def allocate(self, stream):
        tensors = []
        for _ in range(self.rng.randint(1, 8)):
            dtype = self.rng.choice([torch.float32, torch.int64, torch.uint8, torch.float16])
            tensors.append(torch.full((self.size(),), 3, dtype=dtype, device=self.name))
        for index in self.rng.sample(range(len(tensors)), len(tensors) // 2):
            tensors[index] = None  # freed in any order
        tensors = [tensor for tensor in tensors if tensor is not None]
        for tensor in tensors:
            assert tensor.eq(3).all().item(), "a tensor lost its fill"

    def pageable_round_trip(self, stream):
        source = self.host(self.size())
        on_device = source.to(self.name, non_blocking=self.rng.random() < 0.5)
        assert torch.equal(on_device.cpu(), source)

    def pinned_round_trip(self, stream):
        n = self.size()
        source = self.host(n).pin_memory()
        on_device = torch.empty(n, device=self.name)
        on_device.copy_(source, non_blocking=True)
        result = torch.empty(n, pin_memory=True)
        result.copy_(on_device * 2, non_blocking=True)
        stream.synchronize()
        assert torch.equal(result, source * 2)

    def device_to_device(self, stream):
        source = self.host(self.size())
        here = source.to(self.name)
        there = here.to(f"openreg:{self.peer}", non_blocking=self.rng.random() < 0.5)
        back = torch.empty_like(here)
        back.copy_(there)
        assert torch.equal(back.cpu(), source) and torch.equal(here.clone().cpu(), source)

    def operators(self, stream):
        a, b = torch.randn(33, 47, generator=self.data), torch.randn(47, 21, generator=self.data)
        image = torch.randn(2, 3, 12, 12, generator=self.data)
        weight = torch.randn(4, 3, 3, 3, generator=self.data)

        def compute(x, y, img, w):
            product = (x @ y).relu()
            return [product.softmax(dim=1), product.cumsum(0), x.sort(dim=1).values,
                    torch.nn.functional.conv2d(img, w, padding=1), x[x > 0.5].sum(),
                    torch.where(x > 0, x, -x).topk(5, dim=1).values]

        on_device = compute(*(t.to(self.name) for t in (a, b, image, weight)))
        for got, expected in zip(on_device, compute(a, b, image, weight)):
            # The CPU's kernels on other addresses: equal up to vectorisation differences.
            assert torch.allclose(got.cpu(), expected, rtol=1e-5, atol=1e-6), (got, expected)

    def random_numbers(self, stream):
        n = self.rng.randint(1, 3000)
        draw = self.rng.choice([
            lambda device, g: torch.randn(n, device=device, generator=g),
            lambda device, g: torch.rand(n, device=device, generator=g),
            lambda device, g: torch.randint(0, 1000, (n,), device=device, generator=g),
            lambda device, g: torch.empty(n, device=device).normal_(1.0, 2.0, generator=g),
            lambda device, g: torch.empty(n, device=device).bernoulli_(0.3, generator=g),
            lambda device, g: torch.randperm(n, device=device, generator=g),
        ])
        got = draw(self.name, self.on_device).cpu()
        assert torch.equal(got, draw("cpu", self.on_cpu)), "device draws differ from the CPU's"
        assert torch.equal(self.on_device.get_state(), self.on_cpu.get_state())
        # The device's default generator is shared by every thread: unchecked values, but
        # it must keep working.
        assert torch.rand(16, device=self.name).lt(1).all().item()

    def events_across_streams(self, stream):
        n = self.size()
        source = self.host(n).pin_memory()
        data = torch.empty(n, device=self.name)
        data.copy_(source, non_blocking=True)  # on `stream`
        written = openreg.Event()
        written.record(stream)
        reader = self.other_stream(self.device)
        written.wait(reader)  # the reader's later work waits for the copy
        with openreg.stream(reader):
            result = torch.empty(n, pin_memory=True)
            result.copy_(data + 1, non_blocking=True)
        data.record_stream(reader)
        peer = self.other_stream(self.peer)
        peer.wait_event(reader.record_event())  # across devices
        marker = torch.Event(device=f"openreg:{self.peer}")
        marker.record(peer)
        marker.synchronize()  # done only after the reader's work is
        assert torch.equal(result, source + 1)

    def synchronize(self, stream):
        marker = torch.ones(self.size(), device=self.name)
        openreg.synchronize(self.device if self.rng.random() < 0.5 else None)
        assert marker.sum().item() == marker.numel()

    TASKS = ["allocate", "pageable_round_trip", "pinned_round_trip", "device_to_device",
             "operators", "random_numbers", "events_across_streams", "synchronize"]

    def run(self):
        try:
            with openreg.device(self.device):
                if not SHARED:
                    openreg.set_stream(self.peer_stream)  # cross-device copies run there
                    openreg.set_device(self.device)
                while time.monotonic() < self.deadline and not self.stop.is_set():
                    task = self.rng.choice(self.TASKS)
                    use_own = not self.uses_default or self.rng.random() < 0.6
                    stream = self.own if use_own else openreg.default_stream()
                    with openreg.stream(stream):
                        getattr(self, task)(stream)
                    self.counts[task] = self.counts.get(task, 0) + 1
                    self.done += 1
                openreg.synchronize()
        except BaseException:
            self.failures.append(f"thread {self.rank} ({self.name}):\n{traceback.format_exc()}")
            self.stop.set()


def empty_caches(deadline: float, failures: list, stop: threading.Event, calls: list):
    rng = random.Random(SEED)
    try:
        while time.monotonic() < deadline and not stop.is_set():
            openreg.empty_cache()
            calls[0] += 1
            time.sleep(rng.uniform(0.001, 0.01))
    except BaseException:
        failures.append(f"empty_cache thread:\n{traceback.format_exc()}")
        stop.set()


def watch(workers: list[Worker], threads: list[threading.Thread]) -> None:
    """Return when every thread has ended; exit with every stack on a hang."""
    last, since = None, time.monotonic()
    while any(thread.is_alive() for thread in threads):
        faulthandler.dump_traceback_later(STALL, exit=True)  # re-armed while we run
        progress = [worker.done for worker in workers]
        if progress != last:
            last, since = progress, time.monotonic()
        elif time.monotonic() - since > STALL:
            stuck = [thread.name for thread in threads if thread.is_alive()]
            print(f"HANG: no task finished for {STALL:.0f} s; still running: {stuck}",
                  flush=True)
            faulthandler.dump_traceback(file=sys.stdout, all_threads=True)
            sys.stdout.flush()
            os._exit(3)
        time.sleep(0.2)


def warm_up() -> None:
    """Every task once per device on this thread, before the clock starts: the first use
    of an API may import modules (seconds on a busy machine), and every thread would wait
    for that import, looking like a hang."""
    for rank in (0, 1):
        worker = Worker(rank, 0.0, [], threading.Event())
        with openreg.device(rank):
            for task in Worker.TASKS:
                getattr(worker, task)(openreg.current_stream())


def main() -> int:
    if not SHARED and 3 * ((THREADS + 1) // 2) + 3 > 32:
        sys.exit("OPENREG_SOAK_SHARED=0 takes 3 of each device's 32 pool streams per worker "
                 "(and 3 for the warm-up) so that none is shared: at most 18 threads")
    devices = range(openreg.device_count())
    warm_up()
    openreg.empty_cache()
    start = {d: (openreg.memory_allocated(d), openreg.mem_get_info(d)[0]) for d in devices}
    events = live_events()

    deadline = time.monotonic() + SECONDS
    failures: list[str] = []
    stop = threading.Event()
    workers = [Worker(rank, deadline, failures, stop) for rank in range(THREADS)]
    threads = [threading.Thread(target=w.run, name=f"worker-{w.rank}") for w in workers]
    calls = [0]
    if EMPTY_CACHE:
        threads.append(threading.Thread(target=empty_caches, name="empty_cache",
                                        args=(deadline, failures, stop, calls)))
    # Armed before the threads start: a hang that holds the GIL stops this thread anywhere.
    faulthandler.dump_traceback_later(STALL, exit=True)
    for thread in threads:
        thread.start()
    watch(workers, threads)
    faulthandler.dump_traceback_later(30, exit=True)  # the checks below must not hang either
    tasks = {w.rank: w.counts for w in workers}

    # Everything the threads made is gone: the statistics are back where they started.
    del workers, threads
    gc.collect()
    for device in devices:
        openreg.synchronize(device)
    openreg.empty_cache()
    for device in devices:
        after = (openreg.memory_allocated(device), openreg.mem_get_info(device)[0])
        if after != start[device]:
            failures.append(f"openreg:{device}: (allocated, free bytes) {after} after the "
                            f"soak, {start[device]} before")
    if live_events() != events:
        failures.append(f"{live_events() - events} more runtime events after the soak")
    faulthandler.cancel_dump_traceback_later()
    for failure in failures:
        print(failure)
    print(json.dumps({"seconds": SECONDS, "threads": THREADS, "seed": SEED, "shared": SHARED,
                      "empty_cache_calls": calls[0], "tasks": tasks}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
