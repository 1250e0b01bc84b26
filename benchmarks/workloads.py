"""Benchmark workloads: each builds the same computation for a given device.

A workload's ``build(device, quick)`` returns a :class:`Case`. The runner builds one case on
the CPU and one on openreg from the same seed (models and inputs are created on the CPU and
copied, so both start from identical values), runs ``check_steps`` units on each, compares
``result()`` with ``torch.testing.assert_close`` and then times ``run()`` alternately on the
two cases. ``run()`` performs ``inner`` iterations; times are reported per iteration.
A workload that needs more than one process (``cpu_autoload_overhead``) has a ``measure``
function instead, which returns the interleaved times and its correctness verdict itself.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable

import torch
from autoload_overhead import measure_autoload_noise, measure_autoload_overhead
from torch import nn

MiB = 1 << 20


@dataclass
class Case:
    run: Callable[[], None]  # one timed repetition = `inner` iterations
    result: Callable[[], object]  # tensors (or nested lists/dicts of tensors) to compare
    inner: int = 1
    nbytes: int = 0  # bytes moved per iteration (copies: for a GB/s column)
    check_steps: int = 1  # repetitions run before comparing results


@dataclass
class Workload:
    name: str
    description: str
    # None: a context row, measured and shown but not judged and left out of the geomean
    # (it measures something the device cannot change, to set another row against it).
    target: float | None
    build: Callable[[torch.device, bool], Case]
    reps: int = 15  # timed repetitions per side (full run)
    quick_reps: int = 3
    warmup: int = 3
    # Rows that cannot be measured as two cases in one process (e.g. two processes) time
    # themselves: ``measure(quick, reps, warmup)`` returns a :class:`Measured`.
    measure: Callable[[bool, int, int], Measured] | None = None


@dataclass
class Measured:
    times: dict  # {"cpu": [...], "device": [...]}: seconds per iteration, one per repetition
    inner: int
    correct: bool
    mismatch: str | None = None
    note: str | None = None  # shown in the table's notes column (e.g. what the sides are)


def _seed(seed: int = 0) -> None:
    torch.manual_seed(seed)


def _to(module: nn.Module, device: torch.device) -> nn.Module:
    return copy.deepcopy(module).to(device)


def _grads(module: nn.Module) -> dict:
    return {n: p.grad for n, p in module.named_parameters()}


def _params(module: nn.Module) -> dict:
    return {n: p.detach() for n, p in module.named_parameters()}


# --- training-style workloads ----------------------------------------------------------------


def _mlp() -> nn.Module:
    return nn.Sequential(
        nn.Linear(512, 1024), nn.ReLU(),
        nn.Linear(1024, 1024), nn.ReLU(),
        nn.Linear(1024, 10),
    )


def build_mlp(device: torch.device, quick: bool, wrap=lambda model: model) -> Case:
    """``wrap`` runs the forward (``torch.compile`` for the compiled row)."""
    _seed(0)
    model = _mlp()
    x = torch.randn(256, 512)
    y = torch.randint(0, 10, (256,))
    model, x, y = _to(model, device), x.to(device), y.to(device)
    # The same optimizer implementation on both sides (the default would pick `foreach` on
    # openreg and the per-tensor loop on the CPU, which is a different op sequence).
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)
    forward = wrap(model)
    loss_fn = nn.CrossEntropyLoss()
    state = {}

    def run():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(forward(x), y)
        loss.backward()
        opt.step()
        state["loss"] = loss.detach()

    return Case(run=run, result=lambda: {"loss": state["loss"], **_params(model)},
                check_steps=3)


def build_adamw_foreach(device: torch.device, quick: bool) -> Case:
    """The benchmark MLP's ``AdamW(foreach=True).step()`` alone, on fixed gradients.

    Both sides use the multi-tensor path, so the row measures how openreg runs the
    ``_foreach_*`` operators (a handful of calls over 6 tensors) against the CPU's.
    """
    _seed(0)
    model = _to(_mlp(), device)
    x, y = torch.randn(256, 512).to(device), torch.randint(0, 10, (256,)).to(device)
    nn.CrossEntropyLoss()(model(x), y).backward()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    inner = 5

    def run():
        for _ in range(inner):
            opt.step()

    return Case(run=run, result=lambda: _params(model), inner=inner)


def build_dataloader(device: torch.device, quick: bool, move: bool = True) -> Case:
    """One epoch of a small TensorDataset (CIFAR-sized samples, batch 64) through a DataLoader.

    The device side is what a training script writes for an accelerator:
    ``pin_memory=True`` and ``batch.to(device, non_blocking=True)``. Its CPU twin is what the
    same script writes for the CPU: ``pin_memory=False`` and no move, because a CPU program has
    no transfer to make. The pinning and the host->device copy are thus the extra work of
    feeding the device, which is what this row measures; openreg's device memory is host RAM,
    so they can overlap with fetching the next batch (pinned copies are asynchronous) and cost
    little. ``num_workers=0`` keeps both sides in this process (workers would measure process
    start-up and IPC, alike on both sides). Each batch is consumed by one ``add_`` into an
    accumulator on both sides, which also makes the whole epoch checkable.

    ``move=False`` keeps the pinning but nothing else of the device side: the batches are
    pinned (PyTorch's own copy into openreg's pinned memory, as for any accelerator) and
    consumed on the CPU. That is the floor under the device side that no device can lower.
    """
    _seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(2048, 3, 32, 32),
                                          torch.randint(0, 10, (2048,)))
    pinned = device.type != "cpu"
    on_device = pinned and move
    loader = torch.utils.data.DataLoader(data, batch_size=64, shuffle=False, num_workers=0,
                                         pin_memory=pinned)
    consumer = device if on_device else torch.device("cpu")
    acc = torch.zeros(3, 32, 32, device=consumer)
    labels = torch.zeros((), dtype=torch.long, device=consumer)

    def run():
        acc.zero_()
        labels.zero_()
        for xb, yb in loader:
            if on_device:
                xb = xb.to(device, non_blocking=True)
                yb = yb.to(device, non_blocking=True)
            acc.add_(xb.sum(0))
            labels.add_(yb.sum())

    return Case(run=run, result=lambda: [acc, labels])


def build_dataloader_pinning_only(device: torch.device, quick: bool) -> Case:
    return build_dataloader(device, quick, move=False)


def build_transformer(device: torch.device, quick: bool, wrap=lambda model: model) -> Case:
    """``wrap`` runs the forward (``torch.compile`` for the compiled row)."""
    _seed(0)
    layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dropout=0.0, batch_first=True)
    x = torch.randn(16, 64, 256)
    layer, x = _to(layer, device), x.to(device)
    forward = wrap(layer)
    state = {}

    def run():
        layer.zero_grad(set_to_none=True)
        out = forward(x)
        loss = out.square().mean()
        loss.backward()
        state["out"] = out.detach()

    return Case(run=run, result=lambda: {"out": state["out"], **_grads(layer)})


class SmallConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(32 * 16 * 16, 10)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = self.pool(torch.relu(self.conv2(x)))
        return self.fc(x.flatten(1))


def build_convnet(device: torch.device, quick: bool) -> Case:
    _seed(0)
    net = SmallConvNet()
    x = torch.randn(32, 3, 32, 32)
    y = torch.randint(0, 10, (32,))
    net, x, y = _to(net, device), x.to(device), y.to(device)
    loss_fn = nn.CrossEntropyLoss()
    state = {}

    def run():
        net.zero_grad(set_to_none=True)
        loss = loss_fn(net(x), y)
        loss.backward()
        state["loss"] = loss.detach()

    return Case(run=run, result=lambda: {"loss": state["loss"], **_grads(net)})


# --- single-op workloads ---------------------------------------------------------------------


def build_add1(device: torch.device, quick: bool) -> Case:
    t = torch.zeros(1, device=device)
    inner = 2000

    def run():
        for _ in range(inner):
            t.add_(1)

    # After the check repetition the value is exactly `inner`.
    return Case(run=run, result=lambda: t.clone(), inner=inner)


def _make_mul_add(numel: int, inner: int) -> Callable[[torch.device, bool], Case]:
    """``a * b + a`` on float32 vectors: two small out-of-place ops per iteration."""

    def build(device: torch.device, quick: bool) -> Case:
        _seed(0)
        a, b = torch.randn(numel).to(device), torch.randn(numel).to(device)
        state = {}

        def run():
            for _ in range(inner):
                out = a * b + a
            state["out"] = out

        return Case(run=run, result=lambda: state["out"], inner=inner)

    return build


def _make_mm(n: int, inner: int) -> Callable[[torch.device, bool], Case]:
    """``torch.mm`` of two float32 n x n matrices."""

    def build(device: torch.device, quick: bool) -> Case:
        _seed(0)
        a, b = torch.randn(n, n).to(device), torch.randn(n, n).to(device)
        state = {}

        def run():
            for _ in range(inner):
                out = torch.mm(a, b)
            state["out"] = out

        return Case(run=run, result=lambda: state["out"], inner=inner)

    return build


def build_sort(device: torch.device, quick: bool) -> Case:
    _seed(0)
    x = torch.randn(1 << 20).to(device)
    state = {}

    def run():
        state["out"] = torch.sort(x)

    return Case(run=run, result=lambda: list(state["out"]))


def build_cumsum(device: torch.device, quick: bool) -> Case:
    _seed(0)
    x = torch.randn(1 << 20).to(device)
    state = {}

    def run():
        state["out"] = torch.cumsum(x, 0)

    return Case(run=run, result=lambda: state["out"])


def build_empty(device: torch.device, quick: bool) -> Case:
    inner = 2000
    state = {}

    def run():
        for _ in range(inner):
            t = torch.empty(1024, device=device)
        state["t"] = t

    def result():
        t = state["t"]
        # Contents of `empty` are unspecified: compare the metadata and a write through it.
        return [torch.tensor(list(t.shape)), torch.tensor(t.element_size()), t.fill_(3.0)]

    return Case(run=run, result=result, inner=inner)


def build_stack_many(device: torch.device, quick: bool) -> Case:
    """``torch.stack`` of 200 small tensors, as batching per-sample results on the device
    does (graph batching, per-item losses): a cat of many pieces."""
    _seed(0)
    pieces = [torch.randn(16).to(device) for _ in range(200)]
    inner = 50
    state = {}

    def run():
        for _ in range(inner):
            state["out"] = torch.stack(pieces)

    return Case(run=run, result=lambda: state["out"], inner=inner)


COPY_BYTES = 64 * MiB


def _make_copy(kind: str) -> Callable[[torch.device, bool], Case]:
    """64 MiB float32 copy. The CPU side of every copy row is a CPU->CPU ``copy_``."""

    def build(device: torch.device, quick: bool) -> Case:
        _seed(0)
        n = COPY_BYTES // 4
        cpu = torch.device("cpu")
        src_dev, dst_dev = {
            "h2d": (cpu, device),
            "d2h": (device, cpu),
            "d2d": (device, device),
        }[kind]
        src = torch.randn(n).to(src_dev)
        dst = torch.zeros(n, device=dst_dev)
        # Fault in the destination before timing (both sides).
        dst.fill_(1.0)

        def run():
            dst.copy_(src)

        return Case(run=run, result=lambda: dst, nbytes=COPY_BYTES)

    return build


def build_clone(device: torch.device, quick: bool) -> Case:
    """64 MiB ``clone()``: a fresh buffer plus a copy. The CPU twin is a CPU ``clone``, i.e. a
    host memcpy of the same bytes into a buffer glibc keeps (see MALLOC_ENV in run.py)."""
    _seed(0)
    src = torch.randn(COPY_BYTES // 4).to(device)
    state = {}

    def run():
        state["out"] = None  # free the previous clone first, as a loop of clones would
        state["out"] = src.clone()

    return Case(run=run, result=lambda: state["out"], nbytes=COPY_BYTES)


def build_clone_sum(device: torch.device, quick: bool) -> Case:
    """A batch-sized (768 KiB) ``clone()`` whose copy is read right away by a reduction, as a
    training loop clones a batch and computes on it. After a parallel CPU operator the
    intra-op threads spin for a while on the cores: a copy that runs on one thread meanwhile
    is slowed, one split over those threads as the CPU's own clone is, is not."""
    _seed(0)
    src = torch.randn(64, 3, 32, 32).to(device)
    inner = 50
    state = {}

    def run():
        for _ in range(inner):
            state["out"] = src.clone().sum(0)

    return Case(run=run, result=lambda: state["out"], inner=inner)


# --- torch.compile ---------------------------------------------------------------------------
# The same model compiled by Inductor on each side: C++ CPU kernels on the CPU, the same
# kernels launched on openreg memory through the execution layer on the device.


def build_compiled_mlp(device: torch.device, quick: bool) -> Case:
    return build_mlp(device, quick, wrap=torch.compile)


def build_compiled_mlp_cpp_wrapper(device: torch.device, quick: bool) -> Case:
    return build_mlp(device, quick,
                     wrap=lambda model: torch.compile(model, options={"cpp_wrapper": True}))


def build_compiled_transformer(device: torch.device, quick: bool) -> Case:
    return build_transformer(device, quick, wrap=torch.compile)


def build_compile_time(device: torch.device, quick: bool) -> Case:
    """First call of a freshly compiled MLP forward+backward: Dynamo, AOTAutograd and
    Inductor each time, with Inductor's FX-graph and AOT caches off. The C++ kernels are
    compiled in the warm-up repetition and then reused from the in-process code cache,
    on both sides alike: the row compares what openreg adds to compiling, not g++."""
    import torch._inductor.config as inductor_config

    _seed(0)
    model = _to(nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 10)), device)
    x = torch.randn(32, 64).to(device)
    state = {}

    def run():
        torch._dynamo.reset()
        with inductor_config.patch(force_disable_caches=True):
            compiled = torch.compile(model)
            model.zero_grad(set_to_none=True)
            out = compiled(x)
            out.square().mean().backward()
        state["out"] = out.detach()

    return Case(run=run, result=lambda: {"out": state["out"], **_grads(model)})


# Copies must reach 97% of a host memcpy's bandwidth: as a time ratio, <= 1 / 0.97.
COPY_TARGET = 1 / 0.97
# Small ops: element counts / matrix sizes with iterations per repetition (about 1-5 ms each).
MUL_ADD_SIZES = [("1", 1, 1000), ("1k", 1 << 10, 1000), ("16k", 1 << 14, 400),
                 ("256k", 1 << 18, 20)]
MM_SIZES = [(16, 1000), (64, 300), (256, 4)]

WORKLOADS: list[Workload] = [
    Workload("mlp_train_step", "3-layer MLP 512-1024-1024-10, batch 256, Adam step",
             1.05, build_mlp, reps=61),
    Workload("transformer_fwd_bwd", "TransformerEncoderLayer d256 h4 seq64 batch16 fwd+bwd",
             1.05, build_transformer, reps=31),
    Workload("convnet_fwd_bwd", "2 conv + pool + linear on 32x32x3, batch 32, fwd+bwd",
             1.05, build_convnet, reps=41),
    Workload("add_1elem", "x.add_(1) on a 1-element tensor (2000 per repetition)",
             1.25, build_add1, reps=101),
    Workload("sort_1m", "torch.sort on 1M float32", 1.05, build_sort, reps=31),
    Workload("cumsum_1m", "torch.cumsum on 1M float32", 1.05, build_cumsum, reps=101),
    Workload("copy_h2d_64m", "64 MiB host->device copy_ (CPU: host->host)", COPY_TARGET,
             _make_copy("h2d"), reps=61),
    Workload("copy_d2h_64m", "64 MiB device->host copy_ (CPU: host->host)", COPY_TARGET,
             _make_copy("d2h"), reps=61),
    Workload("copy_d2d_64m", "64 MiB device->device copy_ (CPU: host->host)", 1.05,
             _make_copy("d2d"), reps=61),
    Workload("clone_64m", "64 MiB clone() (CPU: CPU clone)", COPY_TARGET, build_clone, reps=61),
    Workload("clone_sum_768k", "x.clone().sum(0) on 64x3x32x32 float32 (50 per repetition)",
             1.10, build_clone_sum, reps=61),
    Workload("empty_cached", "torch.empty(1024) (2000 per repetition)", 1.0, build_empty,
             reps=101),
    *[Workload(f"mul_add_{label}", f"a * b + a on {numel} float32 ({inner} per repetition)",
               1.10, _make_mul_add(numel, inner), reps=61)
      for label, numel, inner in MUL_ADD_SIZES],
    *[Workload(f"mm_{n}", f"torch.mm of float32 {n}x{n} ({inner} per repetition)",
               1.10, _make_mm(n, inner), reps=61)
      for n, inner in MM_SIZES],
    Workload("stack_200", "torch.stack of 200 float32 tensors of 16 elements (50 per "
             "repetition)", 1.10, build_stack_many, reps=61),
    Workload("adamw_foreach_step", "AdamW(foreach=True).step() on the MLP (5 per repetition)",
             1.05, build_adamw_foreach, reps=61),
    Workload("dataloader_pinned", "DataLoader epoch, 2048x3x32x32 batch 64; device: "
             "pin_memory + non_blocking .to() (CPU: no pinning, no move)", 1.10,
             build_dataloader, reps=31),
    Workload("dataloader_pinning_only", "dataloader_pinned's floor: its CPU side with "
             "pin_memory=True, batches consumed on the CPU (no device work; context row)", None,
             build_dataloader_pinning_only, reps=31),
    Workload("compiled_mlp_step", "torch.compile'd MLP 512-1024-1024-10, batch 256, fwd+bwd "
             "(eager Adam step)", 1.05, build_compiled_mlp, reps=61),
    Workload("compiled_mlp_step_cpp_wrapper", "compiled_mlp_step with Inductor's C++ wrapper "
             "(cpp_wrapper=True)", 1.05, build_compiled_mlp_cpp_wrapper, reps=61),
    Workload("compiled_transformer_step", "torch.compile'd TransformerEncoderLayer d256 h4 "
             "seq64 batch16 fwd+bwd", 1.05, build_compiled_transformer, reps=31),
    Workload("compile_time_first_call", "first call of a fresh torch.compile of a small MLP "
             "fwd+bwd (Inductor caches off)", 1.2, build_compile_time, reps=5, quick_reps=1,
             warmup=1),
    Workload("cpu_autoload_overhead", "MLP train step on the CPU, process with openreg "
             "autoloaded vs TORCH_DEVICE_BACKEND_AUTOLOAD=0 (columns: off / on)", 1.01,
             build=None, reps=31, quick_reps=2, warmup=2, measure=measure_autoload_overhead),
    Workload("cpu_autoload_noise", "cpu_autoload_overhead with openreg autoloaded in neither "
             "process: the row's noise between two identical processes (context row)", None,
             build=None, reps=31, quick_reps=2, warmup=2, measure=measure_autoload_noise),
]

BY_NAME = {w.name: w for w in WORKLOADS}
