"""openreg tensors through torch.multiprocessing: shared device memory, never a hang.

Each scenario is a script run in a fresh interpreter (spawned children must be able
to import their target from the main module); every wait inside it has a timeout, and
the script itself runs under one."""

import pickle
from multiprocessing.reduction import ForkingPickler

import pytest
import torch
import torch.multiprocessing.reductions as torch_reductions

from openreg_torch import multiprocessing as openreg_mp

TIMEOUT = 120

PRELUDE = """
import os, sys, time
import torch
import torch.multiprocessing as mp

WAIT = 60  # seconds any get/recv/join may take before the scenario fails

def check(condition, what):
    if not condition:
        print("FAILED:", what, flush=True)
        sys.exit(1)
"""


@pytest.fixture
def scenario(run_python):
    def run(code: str, env: "dict | None" = None) -> str:
        proc = run_python(PRELUDE + code, env=env, timeout=TIMEOUT)
        assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        return proc.stdout

    return run


def test_queue_shares_memory_for_dtypes_strides_offsets_and_views(scenario):
    out = scenario("""
def child(inbox, outbox):
    tensors, expected = inbox.get(timeout=WAIT)
    for t, e in zip(tensors, expected):
        check(t.device == e[0], f"device {t.device} != {e[0]}")
        check(t.dtype == e[1].dtype and t.shape == e[1].shape and t.stride() == e[2],
              f"metadata {t.dtype} {t.shape} {t.stride()}")
        check(t.storage_offset() == e[3], "storage offset")
        torch.testing.assert_close(t.cpu(), e[1])
    base, row, transposed = tensors[0], tensors[1], tensors[2]
    # Views sent together still share one storage here.
    check(row.untyped_storage().data_ptr() == base.untyped_storage().data_ptr(), "one storage")
    check(transposed.untyped_storage().data_ptr() == base.untyped_storage().data_ptr(), "one storage")
    row.fill_(-1.0)      # writes through to the sender's memory
    tensors[3].add_(10)  # int64 on device 1
    torch.openreg.synchronize()
    outbox.put("written")
    inbox.get(timeout=WAIT)  # keep the tensors alive until the sender has looked

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=child, args=(inbox, outbox))
    p.start()
    base = torch.arange(12.0, device="openreg").reshape(3, 4)
    ints = torch.arange(6, device="openreg:1").reshape(2, 3)
    others = [torch.tensor([True, False, True], device="openreg"),
              torch.arange(5, dtype=torch.bfloat16, device="openreg"),
              torch.arange(4.0, device="openreg:1").to(torch.complex64) * 1j,
              torch.arange(10, dtype=torch.uint8, device="openreg")[3:]]
    tensors = [base, base[1], base.t(), ints, *others]
    expected = [(t.device, t.cpu(), t.stride(), t.storage_offset()) for t in tensors]
    inbox.put((tensors, expected))
    check(outbox.get(timeout=WAIT) == "written", "child wrote")
    torch.testing.assert_close(base[1].cpu(), torch.full((4,), -1.0))
    torch.testing.assert_close(base[0].cpu(), torch.arange(4.0))
    torch.testing.assert_close(ints.cpu(), torch.arange(6).reshape(2, 3) + 10)
    inbox.put("bye")
    p.join(WAIT)
    check(p.exitcode == 0, f"child exit {p.exitcode}")
    print("ok")
""")
    assert out.strip() == "ok"


def test_sparse_and_nested_tensors_travel_as_their_shared_pieces(scenario):
    out = scenario("""
import warnings
warnings.filterwarnings("ignore")  # sparse/nested "beta" and invariant-check notices

def child(inbox, outbox):
    tensors, expected = inbox.get(timeout=WAIT)
    for t, (device, layout, dense) in zip(tensors, expected):
        check(t.device == device and t.layout == layout, f"{t.device} {t.layout}")
        got = t.to_padded_tensor(0.0) if t.is_nested else t.to_dense()
        torch.testing.assert_close(got.cpu(), dense)
    coo, csr = tensors[0], tensors[1]
    check(coo.is_coalesced(), "coalesced flag kept")
    coo._values().mul_(10)  # the pieces are the sender's memory
    csr.values().mul_(10)
    torch.openreg.synchronize()
    outbox.put("written")
    inbox.get(timeout=WAIT)

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=child, args=(inbox, outbox))
    p.start()
    dense = torch.tensor([[0., 1., 0., 0.], [2., 0., 0., 3.]])
    tensors = [dense.to_sparse().to("openreg:1"), dense.to_sparse_csr().to("openreg"),
               dense.to_sparse_csc().to("openreg"), dense.to_sparse_bsr((1, 2)).to("openreg"),
               torch.nested.nested_tensor([torch.ones(2), torch.arange(3.0)], device="openreg")]
    expected = [(t.device, t.layout, t.to_padded_tensor(0.0).cpu() if t.is_nested
                 else t.to_dense().cpu()) for t in tensors]
    inbox.put((tensors, expected))
    check(outbox.get(timeout=WAIT) == "written", "child wrote")
    torch.testing.assert_close(tensors[0].to_dense().cpu(), dense * 10)
    torch.testing.assert_close(tensors[1].to_dense().cpu(), dense * 10)
    inbox.put("bye")
    p.join(WAIT)
    check(p.exitcode == 0, f"child exit {p.exitcode}")
    print("ok")
""")
    assert out.strip() == "ok"


def test_a_received_tensor_is_sent_on(scenario):
    out = scenario("""
def relay(inbox, onward):
    t = inbox.get(timeout=WAIT)
    onward.put(t[1:])  # a view of received memory, to a third process
    inbox.get(timeout=WAIT)

def last(onward, outbox):
    t = onward.get(timeout=WAIT)
    t.mul_(2)
    torch.openreg.synchronize()
    outbox.put(t.cpu().tolist())

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    inbox, onward, outbox = ctx.Queue(), ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=relay, args=(inbox, onward)), ctx.Process(target=last, args=(onward, outbox))]
    for p in procs:
        p.start()
    t = torch.arange(1.0, 5.0, device="openreg")
    inbox.put(t)
    seen = outbox.get(timeout=WAIT)
    check(seen == [4.0, 6.0, 8.0], str(seen))
    torch.testing.assert_close(t.cpu(), torch.tensor([1.0, 4.0, 6.0, 8.0]))
    inbox.put("bye")
    for p in procs:
        p.join(WAIT)
        check(p.exitcode == 0, f"exit {p.exitcode}")
    print("ok")
""")
    assert out.strip() == "ok"


def test_pipe_process_args_and_pool(scenario):
    out = scenario("""
def by_pipe(conn):
    t = conn.recv()
    t += 1
    torch.openreg.synchronize()
    conn.send(torch.ones(3, device="openreg:1") * 7)  # made here, shared back
    conn.recv()

def by_args(t, done):
    t.zero_()
    torch.openreg.synchronize()
    done.put(str(t.device))

def square_in_place(t):
    t.pow_(2)
    torch.openreg.synchronize()
    return float(t.sum().item())

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    a, b = ctx.Pipe()
    p = ctx.Process(target=by_pipe, args=(b,))
    p.start()
    t = torch.zeros(4, device="openreg")
    a.send(t)
    back = a.recv()
    check(back.device == torch.device("openreg:1"), str(back.device))
    torch.testing.assert_close(back.cpu(), torch.full((3,), 7.0))
    torch.testing.assert_close(t.cpu(), torch.ones(4))
    del back
    a.send("bye")
    p.join(WAIT)
    check(p.exitcode == 0, "pipe child")

    done = ctx.Queue()
    u = torch.ones(5, device="openreg:1")
    q = ctx.Process(target=by_args, args=(u, done))
    q.start()
    check(done.get(timeout=WAIT) == "openreg:1", "device of process args")
    q.join(WAIT)
    torch.testing.assert_close(u.cpu(), torch.zeros(5))

    v = torch.arange(6.0, device="openreg")
    with ctx.Pool(2) as pool:
        sums = pool.map(square_in_place, [v[:3], v[3:]])
    check(sums == [5.0, 50.0], str(sums))
    torch.testing.assert_close(v.cpu(), torch.arange(6.0) ** 2)
    print("ok")
""")
    assert out.strip() == "ok"


def test_memory_outlives_the_senders_reference_and_is_returned(scenario):
    out = scenario("""
def child(inbox, outbox):
    t = inbox.get(timeout=WAIT)
    outbox.put("opened")
    inbox.get(timeout=WAIT)  # the sender has dropped its tensor and allocated more
    outbox.put(float(t.sum().item()))
    del t  # released here: the sender may reuse the block

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=child, args=(inbox, outbox))
    p.start()
    torch.openreg.synchronize()
    before = torch.openreg.memory_allocated()
    t = torch.full((1 << 20,), 2.0, device="openreg")
    inbox.put(t)
    del t  # the block waits in the limbo, not in the cache
    # Allocations meanwhile must not get (and scribble on) the shared block.
    junk = [torch.full((1 << 20,), 9.0, device="openreg") for _ in range(4)]
    check(outbox.get(timeout=WAIT) == "opened", "receiver opened")
    junk += [torch.full((1 << 20,), 9.0, device="openreg") for _ in range(4)]
    torch.openreg.synchronize()
    inbox.put("read now")
    check(outbox.get(timeout=WAIT) == 2.0 * (1 << 20), "receiver read the sent values")
    p.join(WAIT)
    del junk
    deadline = time.monotonic() + WAIT
    while torch.openreg.ipc_collect() and time.monotonic() < deadline:
        time.sleep(0.01)
    check(torch.openreg.ipc_collect() == 0, "limbo drained")
    check(torch.openreg.memory_allocated() == before, "block back in the allocator")
    print("ok")
""")
    assert out.strip() == "ok"


# ------------------------------------------------------------------ never a hang


def test_former_hang_put_on_a_queue_now_arrives(scenario):
    # The reproduction: before, the feeder thread printed `_share_fd_: only
    # available on CPU` and the receiver waited forever.
    out = scenario("""
def child(q, out):
    out.put(q.get(timeout=WAIT).cpu().tolist())

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    q, out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=child, args=(q, out))
    p.start()
    t = torch.arange(4., device="openreg")
    q.put(t)
    print(out.get(timeout=WAIT))
    p.join(WAIT)
""")
    assert out.strip() == "[0.0, 1.0, 2.0, 3.0]"


def test_unsharable_tensor_raises_in_the_receiver_of_a_queue(scenario):
    out = scenario("""
def child(q, out):
    try:
        q.get(timeout=WAIT)
        out.put("no error")
    except RuntimeError as e:
        out.put(str(e))

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    q, out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=child, args=(q, out))
    p.start()
    leaf = torch.ones(3, device="openreg", requires_grad=True)
    q.put(leaf * 2)  # not a leaf: autograd cannot cross processes
    print(out.get(timeout=WAIT))
    p.join(WAIT)
""")
    assert "could not share a tensor" in out and "non-leaf tensor which requires_grad" in out


def test_unsharable_tensor_raises_in_the_sender_of_a_pipe(scenario):
    out = scenario("""
if __name__ == "__main__":
    a, b = mp.get_context("spawn").Pipe()
    leaf = torch.ones(3, device="openreg", requires_grad=True)
    try:
        a.send(leaf * 2)
        print("sent")
    except RuntimeError as e:
        print("raised:", "non-leaf" in str(e))
""")
    assert out.strip() == "raised: True"


def test_sender_gone_before_the_receiver_opened(scenario):
    out = scenario("""
def child(q):
    q.put(torch.ones(3, device="openreg"))
    q.close()
    q.join_thread()  # sent; then this process (the memory's owner) exits

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(q,))
    p.start()
    p.join(WAIT)
    check(p.exitcode == 0, "child")
    try:
        q.get(timeout=WAIT)
        print("received")
    except RuntimeError as e:
        print("raised:", "has exited" in str(e))
""")
    assert out.strip() == "raised: True"


def test_fork_after_openreg_was_used_raises_in_the_child(scenario):
    out = scenario("""
def child(q, out):
    try:
        q.get(timeout=WAIT)
        out.put("received")
    except RuntimeError as e:
        out.put(str(e))

if __name__ == "__main__":
    t = torch.ones(2, device="openreg")  # openreg initialised before the fork
    ctx = mp.get_context("fork")
    q, out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=child, args=(q, out))
    p.start()
    q.put(t)
    print(out.get(timeout=WAIT))
    p.join(WAIT)
""")
    assert "Cannot re-initialize openreg in forked subprocess" in out


def test_returned_to_the_sender_after_release_is_a_clear_error(scenario):
    out = scenario("""
if __name__ == "__main__":
    from multiprocessing.reduction import ForkingPickler
    import pickle
    t = torch.ones(3, device="openreg")
    data = ForkingPickler.dumps(t)
    same = pickle.loads(data)  # back in this process: the very same storage
    check(same.untyped_storage().data_ptr() == t.untyped_storage().data_ptr(), "same storage")
    data = ForkingPickler.dumps(t)
    del t, same
    try:
        pickle.loads(data)
        print("loaded")
    except RuntimeError as e:
        print("raised:", "came back to it after its storage was released" in str(e))
    check(torch.openreg.ipc_collect() == 0, "a handle consumed by its own process does not hold memory")
""")
    assert out.strip() == "raised: True"


# --------------------------------------------------------------------- do no harm


def test_cpu_tensors_and_storages_still_use_torchs_reducers():
    cpu = torch.arange(4.0)
    for cls, torch_reduce in ((torch.Tensor, torch_reductions.reduce_tensor),
                              (torch.nn.Parameter, torch_reductions.reduce_tensor),
                              (torch.UntypedStorage, torch_reductions.reduce_storage)):
        ours = ForkingPickler._extra_reducers[cls]
        assert ours._openreg
        obj = cpu.untyped_storage() if cls is torch.UntypedStorage else cpu
        if cls is torch.nn.Parameter:
            obj = torch.nn.Parameter(cpu.clone())
        assert ours(obj)[0] is torch_reduce(obj)[0]
    openreg_mp._install()  # idempotent: still one layer in front of torch's
    assert ForkingPickler._extra_reducers[torch.Tensor](cpu)[0] is torch_reductions.rebuild_tensor


def test_cpu_tensor_through_a_queue_still_shares_cpu_memory(scenario):
    out = scenario("""
def child(q, out):
    t = q.get(timeout=WAIT)
    t.add_(1)
    out.put(t.is_shared())

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    q, out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=child, args=(q, out))
    p.start()
    t = torch.zeros(3)
    q.put(t)
    print(out.get(timeout=WAIT), t.tolist())
    p.join(WAIT)
""")
    assert out.strip() == "True [1.0, 1.0, 1.0]"


def test_openreg_storage_pickles_through_forking_pickler():
    t = torch.arange(6.0, device="openreg")
    storage = t.untyped_storage()
    again = pickle.loads(ForkingPickler.dumps(storage))
    assert again.device == storage.device and again.data_ptr() == storage.data_ptr()
    empty = torch.empty(0, device="openreg").untyped_storage()
    assert pickle.loads(ForkingPickler.dumps(empty)).nbytes() == 0


# --------------------------------------------------------------- interprocess events


def test_interprocess_event_orders_a_readers_stream(scenario):
    out = scenario("""
from openreg_torch.openreg.streams import _hold

def child(inbox, outbox):
    t = inbox.get(timeout=WAIT)
    outbox.put("have tensor")
    event = inbox.get(timeout=WAIT)
    outbox.put(("queried", event.query()))
    event.wait()  # this process's current stream waits for the sender's record
    outbox.put(t.cpu().tolist())  # queued behind the wait
    event.synchronize()
    outbox.put(event.query())

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=child, args=(inbox, outbox))
    p.start()
    t = torch.zeros(4, device="openreg")
    inbox.put(t)
    check(outbox.get(timeout=WAIT) == "have tensor", "tensor")
    source = torch.full((4,), 5.0).pin_memory()
    s = torch.openreg.Stream()
    event = torch.openreg.Event(interprocess=True)
    with _hold(s):  # nothing on s runs until the block ends
        with torch.openreg.stream(s):
            t.copy_(source, non_blocking=True)
        event.record(s)
        inbox.put(event)
        check(outbox.get(timeout=WAIT) == ("queried", False), "not complete while held")
    print(outbox.get(timeout=WAIT), outbox.get(timeout=WAIT))
    p.join(WAIT)
""")
    assert out.strip() == "[5.0, 5.0, 5.0, 5.0] True"


def test_interprocess_event_errors_and_handles():
    with pytest.raises(ValueError, match="enable_timing=False"):
        torch.openreg.Event(enable_timing=True, interprocess=True)
    with pytest.raises(RuntimeError, match="not created with interprocess=True"):
        torch.openreg.Event().ipc_handle()
    event = torch.openreg.Event(interprocess=True)
    assert isinstance(event, torch.openreg.Event) and isinstance(event, torch.Event)
    handle = event.ipc_handle()
    assert isinstance(handle, bytes) and len(handle) == 64
    with pytest.raises(RuntimeError, match="this very process"):
        torch.openreg.Event.from_ipc_handle(0, handle)
    with pytest.raises(ValueError, match="no timing"):
        event.elapsed_time(event)
    assert event.query()
    event.record()
    event.synchronize()
    torch.openreg.current_stream().wait_event(event)
    assert event.query()
    with pytest.raises(RuntimeError, match="not an openreg IPC handle"):
        torch.openreg.Event.from_ipc_handle(0, bytes(64))


def test_an_interprocess_event_takes_the_device_of_its_first_record():
    # As a CUDA event: made on its first record's device, not where it was constructed.
    event = torch.openreg.Event(interprocess=True)
    assert event.device is None and event.query()
    event.wait()  # never recorded: nothing to wait for
    event.synchronize()
    event.record(torch.openreg.Stream(1))  # the current device is 0
    assert event.device == torch.device("openreg", 1)
    event.synchronize()
    assert event.query()
    shared = torch.openreg.Event(interprocess=True)
    with torch.openreg.device(1):
        shared.ipc_handle()  # sharing first: the current device's
    assert shared.device == torch.device("openreg", 1)
    with pytest.raises(RuntimeError, match="belongs to device 1"):
        shared.record(torch.openreg.Stream(0))


# ------------------------------------------------------------------------ DataLoader

DATASET = """
class Squares(torch.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.full((3,), float(i * i), device="openreg")
"""


def test_dataloader_spawn_workers_return_openreg_tensors(scenario):
    out = scenario(DATASET + """
if __name__ == "__main__":
    loader = torch.utils.data.DataLoader(Squares(), batch_size=2, num_workers=2,
                                         multiprocessing_context="spawn",
                                         persistent_workers=True, timeout=WAIT)
    for epoch in range(2):
        batches = list(loader)
        check(all(b.device == torch.device("openreg:0") for b in batches), "device")
        values = torch.cat([b[:, 0].cpu() for b in batches]).tolist()
        check(values == [float(i * i) for i in range(8)], str(values))
    print("ok")
""")
    assert out.strip() == "ok"


def test_dataloader_fork_before_openreg_was_used(scenario):
    # The parent has not touched the device: forked workers start openreg themselves.
    out = scenario(DATASET + """
if __name__ == "__main__":
    loader = torch.utils.data.DataLoader(Squares(), batch_size=4, num_workers=2,
                                         multiprocessing_context="fork", timeout=WAIT)
    print([b[:, 0].cpu().tolist() for b in loader])
""")
    assert out.strip() == "[[0.0, 1.0, 4.0, 9.0], [16.0, 25.0, 36.0, 49.0]]"


def test_dataloader_fork_after_openreg_was_used_raises(scenario):
    out = scenario(DATASET + """
if __name__ == "__main__":
    torch.ones(1, device="openreg")  # the parent initialised openreg: forked workers cannot use it
    loader = torch.utils.data.DataLoader(Squares(), batch_size=4, num_workers=1,
                                         multiprocessing_context="fork", timeout=WAIT)
    try:
        list(loader)
        print("loaded")
    except RuntimeError as e:
        print("raised:", "forked" in str(e))
""")
    assert out.strip() == "raised: True"


def test_dataloader_pin_memory(scenario):
    # CPU batches are pinned for openreg (the current accelerator); openreg batches cannot
    # be pinned, which is a clear error in the loop, as for CUDA tensors.
    out = scenario("""
class Rows(torch.utils.data.Dataset):
    def __init__(self, device):
        self.device = device

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.full((3,), float(i), device=self.device)

if __name__ == "__main__":
    loader = torch.utils.data.DataLoader(Rows("cpu"), batch_size=2, num_workers=1, pin_memory=True,
                                         multiprocessing_context="spawn", timeout=WAIT)
    batches = list(loader)
    check(all(b.is_pinned() for b in batches), "pinned")
    moved = [b.to("openreg", non_blocking=True) for b in batches]
    print([b[:, 0].cpu().tolist() for b in moved])
    loader = torch.utils.data.DataLoader(Rows("openreg"), batch_size=2, num_workers=1, pin_memory=True,
                                         multiprocessing_context="spawn", timeout=WAIT)
    try:
        list(loader)
    except RuntimeError as e:
        print("raised:", "cannot pin" in str(e))
""")
    assert out.split("\n")[:2] == ["[[0.0, 1.0], [2.0, 3.0]]", "raised: True"]


# ------------------------------------------------------------------ example and speed


def test_hogwild_example(run_python):
    from pathlib import Path

    example = Path(__file__).resolve().parents[3] / "examples" / "hogwild.py"
    proc = run_python(example.read_text() + "\n", timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    # e.g. "workers [0, 1] done; loss 1.2345 -> 0.0001; largest weight change 0.987"
    words = proc.stdout.split()
    before, after = float(words[words.index("loss") + 1].rstrip(";")), float(words[words.index("->") + 1].rstrip(";"))
    assert "workers [0, 1] done" in proc.stdout
    assert after < 0.01 < before, proc.stdout


SPEED = """
def child(conn):
    while True:
        t = conn.recv()
        if t is None:
            return
        del t
        conn.send(1)

def round_trips(conn, t, n):
    times = []
    for _ in range(n):
        start = time.perf_counter()
        conn.send(t)
        conn.recv()
        times.append(time.perf_counter() - start)
    return sorted(times)[n // 2]

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    a, b = ctx.Pipe()
    p = ctx.Process(target=child, args=(b,))
    p.start()
    small = torch.ones(1024, device="openreg")          # 4 KiB
    large = torch.ones(16 * 2**20, device="openreg")    # 64 MiB
    round_trips(a, small, 5)
    round_trips(a, large, 5)  # warm-up: mappings and connections exist after this
    t_small = round_trips(a, small, 30)
    t_large = round_trips(a, large, 30)
    a.send(None)
    p.join(WAIT)
    # What a transport that copied the payload would pay at least once: one device copy.
    copy = torch.empty_like(large)
    copies = []
    for _ in range(7):
        start = time.perf_counter()
        copy.copy_(large)
        torch.openreg.synchronize()
        copies.append(time.perf_counter() - start)
    t_copy = sorted(copies)[len(copies) // 2]
    print(f"{t_small * 1e6:.0f} {t_large * 1e6:.0f} {t_copy * 1e6:.0f}")
"""


def test_sending_64MiB_costs_far_less_than_copying_it(scenario):
    small_us, large_us, copy_us = map(float, scenario(SPEED).split())
    print(f"send+receive (median round trip): 4 KiB {small_us:.0f} us, 64 MiB {large_us:.0f} us; "
          f"one 64 MiB device copy {copy_us:.0f} us")
    # Sharing costs a fixed handshake; a size-dependent part (e.g. AddressSanitizer clearing
    # the shadow of a mapping) stays far below moving the bytes, which a copy must do.
    assert large_us < copy_us / 4, (small_us, large_us, copy_us)


def test_shared_memory_is_counted_apart_in_both_processes(scenario):
    out = scenario("""
def child(inbox, outbox):
    t = inbox.get(timeout=WAIT)
    stats = torch.openreg.ipc_memory_stats()
    outbox.put((stats["imported_bytes.current"], stats["imported_storages.current"],
                torch.openreg.memory_allocated()))
    inbox.get(timeout=WAIT)  # the sender has dropped its tensor: this one keeps the memory
    del t
    stats = torch.openreg.ipc_memory_stats()
    outbox.put((stats["imported_bytes.current"], stats["imported_bytes.peak"]))

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=child, args=(inbox, outbox))
    p.start()
    t = torch.ones(1 << 18, device="openreg")  # 1 MiB
    inbox.put(t)
    imported, storages, allocated = outbox.get(timeout=WAIT)
    check((imported, storages, allocated) == (1 << 20, 1, 0), f"receiver {imported} {storages} {allocated}")
    allocated_before = torch.openreg.memory_allocated()
    del t  # freed here while the child still uses it: the block waits in the limbo
    stats = torch.openreg.ipc_memory_stats()
    check((stats["limbo_blocks.current"], stats["limbo_bytes.current"]) == (1, 1 << 20), f"limbo {stats}")
    check(torch.openreg.memory_allocated() == allocated_before, "limbo memory stays allocated")
    inbox.put("go")
    imported, peak = outbox.get(timeout=WAIT)
    check((imported, peak) == (0, 1 << 20), f"receiver after del {imported} {peak}")
    p.join(WAIT)
    torch.openreg.ipc_collect()
    stats = torch.openreg.ipc_memory_stats()
    check(stats["limbo_blocks.current"] == 0 and stats["limbo_bytes.current"] == 0, f"collected {stats}")
    check(torch.openreg.memory_allocated() < allocated_before, "released after collect")
    print("ok")
""")
    assert out.strip() == "ok"


def test_ipc_memory_stats_rejects_bad_devices():
    with pytest.raises(ValueError, match="Expected an openreg device"):
        torch.openreg.ipc_memory_stats("cpu")
    with pytest.raises(ValueError, match="Invalid openreg device index"):
        torch.openreg.ipc_memory_stats(torch.openreg.device_count())


def test_memory_other_processes_released_is_reclaimed_before_out_of_memory(scenario):
    # 8 MiB devices: the sender's 6 MiB block waits in the limbo after both processes
    # dropped it; a new 6 MiB allocation fits only if the allocator collects it first.
    out = scenario("""
def child(inbox, outbox):
    t = inbox.get(timeout=WAIT)
    outbox.put("received")
    inbox.get(timeout=WAIT)
    del t
    torch.openreg.synchronize()
    outbox.put("released")
    inbox.get(timeout=WAIT)

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=child, args=(inbox, outbox))
    p.start()
    t = torch.ones(6 << 18, device="openreg")  # 6 MiB
    inbox.put(t)
    check(outbox.get(timeout=WAIT) == "received", "child received")
    del t
    inbox.put("drop it")
    check(outbox.get(timeout=WAIT) == "released", "child released")
    check(torch.openreg.ipc_memory_stats()["limbo_blocks.current"] == 1, "still in the limbo")
    again = torch.zeros(6 << 18, device="openreg")
    check(torch.openreg.ipc_memory_stats()["limbo_blocks.current"] == 0, "collected")
    inbox.put("bye")
    p.join(WAIT)
    print("ok", again.sum().item())
""", env={"OPENREG_DEVICE_MEMORY": "8MiB"})
    assert out.strip() == "ok 0.0"
