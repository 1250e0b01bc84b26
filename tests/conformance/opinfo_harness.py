"""Run the OpInfo database on openreg and compare every sample with CPU.

The harness is shared by ``test_opinfo.py`` (pytest, one test per op and check) and
``report.py`` (the full sweep, crash-isolated in subprocesses, with pass rates).

For every sample of ``op.sample_inputs("cpu", torch.float32, requires_grad=...)`` the
sample is copied twice with the same layout (sizes, strides, storage offset, storages
shared between arguments): once on the CPU, once on openreg. The op runs on both; a
sample whose CPU run raises is not counted. The checks are

``forward``  the function variant: values, dtypes, shapes, strides, output device,
             which outputs alias which inputs, and the inputs after the call
             (ops such as batch_norm update running statistics in place).
``method``   the method variant (``op.method_variant``, e.g. ``x.add(y)``): the same.
``inplace``  the in-place variant (``op.inplace_variant``): returns its input, mutates it.
``out``      the ``out=`` variant with zero-size ``out`` tensors (the resize path).
``grad``     for ``op.supports_autograd``: a weighted sum of the differentiable outputs
             is back-propagated on both sides; the gradients of all inputs are compared.

Host code never reads device memory here: device tensors only reach the host through
``.cpu()``; ``data_ptr()`` (an address, not a read) is used for the aliasing check.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
import tomllib
import traceback
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy
import torch
from torch.testing._internal import common_utils

DEVICE = "openreg"
DTYPE = torch.float32
HERE = Path(__file__).resolve().parent
EXPECTED_FAILURES_FILE = HERE / "expected_failures.toml"
CHECKS = ("forward", "method", "inplace", "out", "grad")
# The dtypes a full sweep also runs forward (function, method, in-place, out=) in.
EXTRA_DTYPES = (torch.float64, torch.int64, torch.bool)

# Ops drawing random numbers: seeded identically on both sides and compared exactly
# (openreg's generator wraps a CPU generator, so the same seed gives the same numbers).
RANDOM_OPS = frozenset(
    {
        "bernoulli",
        "cauchy",
        "exponential",
        "geometric",
        "log_normal",
        "multinomial",
        "normal",
        "normal.in_place",
        "normal.number_mean",
        "uniform",
        "rand_like",
        "randn",
        "randn_like",
        "randint",
        "randint_like",
        "nn.functional.dropout",
        "nn.functional.dropout2d",
        "nn.functional.dropout3d",
        "nn.functional.alpha_dropout",
        "nn.functional.feature_alpha_dropout.with_train",
        "nn.functional.feature_alpha_dropout.without_train",
        "nn.functional.fractional_max_pool2d",
        "nn.functional.fractional_max_pool3d",
        "nn.functional.rrelu",
        "nn.functional.multi_head_attention_forward",
        "svd_lowrank",
        "pca_lowrank",
    }
)

SEED = 1234

# A representative subset for the default (CI) run: every family of kernels and every
# fallback path (fresh outputs, views, in-place, out=, mutated arguments, random,
# several outputs, tensor lists, scalar outputs, complex results, LAPACK/MKL/oneDNN).
DEFAULT_SUBSET = (
    # elementwise unary / binary / ternary
    "abs", "exp", "sigmoid", "erfinv", "nan_to_num", "add", "mul", "div.floor_rounding",
    "pow", "atan2", "clamp", "lerp", "addcmul", "where", "logical_and", "eq",
    # reductions
    "sum", "mean", "var_mean", "amax", "argmax", "prod", "logsumexp", "norm",
    "max.reduction_with_dim",
    # matmul / linalg
    "mm", "addmm", "bmm", "matmul", "einsum", "linalg.solve", "linalg.qr",
    "linalg.cholesky", "linalg.svd",
    # indexing / scatter / gather
    "index_select", "index_add", "index_put", "gather", "scatter", "scatter_add",
    "scatter_reduce.sum", "take_along_dim", "__getitem__", "masked_fill", "masked_select",
    "masked_scatter", "nonzero",
    # views
    "reshape", "view", "transpose", "permute", "unfold", "as_strided", "narrow", "select",
    "chunk", "split", "expand", "squeeze", "diagonal", "view_as_complex",
    # sorting / scans / joins
    "sort", "topk", "cumsum", "cummax", "unique", "cat", "stack", "repeat",
    # masked ops
    "masked.sum", "masked.softmax",
    # neural network
    "nn.functional.conv2d", "nn.functional.conv_transpose2d", "nn.functional.max_pool2d",
    "nn.functional.avg_pool2d", "nn.functional.adaptive_avg_pool2d", "softmax",
    "log_softmax", "nn.functional.layer_norm", "nn.functional.batch_norm",
    "nn.functional.embedding", "nn.functional.cross_entropy", "nn.functional.nll_loss",
    "nn.functional.mse_loss", "nn.functional.interpolate.bilinear", "nn.functional.pad.constant",
    "nn.functional.pad.reflect", "nn.functional.gelu", "nn.functional.linear",
    "nn.functional.scaled_dot_product_attention",
    # fft / complex
    "fft.fft", "fft.rfft", "fft.ifft", "fft.irfft", "complex", "polar", "angle",
    # random
    "nn.functional.dropout", "bernoulli", "normal", "uniform", "rand_like", "randint_like",
    "multinomial",
    # factories, copies, metadata, arguments that stay on the CPU
    "zeros_like", "full", "arange", "to", "clone", "contiguous", "fill", "zero_", "item",
    "resize_", "tensor_split", "mode",
)


# ----------------------------------------------------------------------------------------
# Expected failures


@dataclasses.dataclass(frozen=True)
class Expectation:
    """One entry of expected_failures.toml."""

    op: str
    kind: str  # "fail" | "skip" | "tolerance" | "metadata"
    reason: str
    checks: tuple[str, ...] = CHECKS
    atol: float | None = None
    rtol: float | None = None
    modes: tuple[str, ...] = ("zero-copy", "copy")
    dtypes: tuple[str, ...] | None = None  # None: every dtype the sweep runs

    def applies(self, mode: str, dtype: torch.dtype = DTYPE) -> bool:
        return mode in self.modes and (self.dtypes is None or dtype_name(dtype) in self.dtypes)


KINDS = {"fail", "skip", "tolerance", "metadata"}


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _torch_release() -> str:
    import torch

    return ".".join(torch.__version__.split(".")[:2])


def load_expectations(path: Path = EXPECTED_FAILURES_FILE) -> dict[str, list[Expectation]]:
    """op full name -> its entries (an op may have one per fallback mode)."""
    with open(path, "rb") as handle:
        data = tomllib.load(handle)
    result: dict[str, list[Expectation]] = {}
    for op, entries in data.items():
        for entry in entries if isinstance(entries, list) else [entries]:
            unknown = set(entry) - {"kind", "reason", "checks", "atol", "rtol", "modes", "torch",
                                    "dtypes"}
            assert not unknown, f"{op}: unknown fields {sorted(unknown)}"
            # `torch = ["2.13"]`: the entry only concerns those torch releases (an op may
            # leave op_db in a later one).
            if "torch" in entry and _torch_release() not in entry["torch"]:
                continue
            kind = entry["kind"]
            assert kind in KINDS, f"{op}: kind must be one of {sorted(KINDS)}, not {kind!r}"
            reason = entry.get("reason", "").strip()
            assert len(reason) >= 20, f"{op}: every entry needs a concrete reason"
            checks = tuple(entry.get("checks", CHECKS))
            assert set(checks) <= set(CHECKS), f"{op}: checks must be among {CHECKS}"
            if kind == "tolerance":
                assert "atol" in entry or "rtol" in entry, f"{op}: tolerance needs atol/rtol"
            result.setdefault(op, []).append(
                Expectation(
                    op=op,
                    kind=kind,
                    reason=reason,
                    checks=checks,
                    atol=entry.get("atol"),
                    rtol=entry.get("rtol"),
                    modes=tuple(entry.get("modes", ("zero-copy", "copy"))),
                    dtypes=tuple(entry["dtypes"]) if "dtypes" in entry else None,
                )
            )
    return result


def fallback_mode() -> str:
    import os

    return os.environ.get("OPENREG_FALLBACK", "") or "zero-copy"


# ----------------------------------------------------------------------------------------
# Op selection


def all_ops() -> list[Any]:
    """Every OpInfo of the shipped op_db (some support only integer or bool dtypes)."""
    from torch.testing._internal.common_methods_invocations import op_db

    return list(op_db)


def float32_ops() -> list[Any]:
    """The OpInfos of the shipped op_db that support float32 on the CPU."""
    from torch.testing._internal.common_methods_invocations import op_db

    return [op for op in op_db if op.supports_dtype(DTYPE, "cpu")]


def is_full(selection: str | None) -> bool:
    return selection in ("full", "all")


def select_ops(selection: str | None) -> list[Any]:
    """``None``/"subset": DEFAULT_SUBSET and every op expected_failures.toml names (so that
    a stale entry is noticed); "full"/"all": every op; else comma-separated names."""
    ops = float32_ops()
    by_name = {op.full_name: op for op in ops}
    if selection in (None, "", "subset", "default"):
        listed = [name for name in load_expectations() if name not in DEFAULT_SUBSET]
        names = DEFAULT_SUBSET + tuple(name for name in listed if name in by_name)
    elif is_full(selection):
        return ops
    else:
        names = tuple(name.strip() for name in selection.split(",") if name.strip())
    missing = [name for name in names if name not in by_name]
    assert not missing, f"not float32 OpInfos of this torch: {missing}"
    return [by_name[name] for name in names]


# ----------------------------------------------------------------------------------------
# Copying samples


class _Copier:
    """Copies a sample's tensors to a device keeping sizes, strides, offsets and sharing."""

    def __init__(self, device: str):
        self.device = torch.device(device)
        self.storages: dict[tuple[int, int], torch.Tensor] = {}
        self.tensors: dict[int, torch.Tensor] = {}

    def tensor(self, source: torch.Tensor) -> torch.Tensor:
        if id(source) in self.tensors:  # the same tensor twice stays one tensor
            return self.tensors[id(source)]
        requires_grad = source.requires_grad
        with torch.no_grad():
            copy = self._copy(source.detach())
        copy = copy.detach().requires_grad_(requires_grad)
        self.tensors[id(source)] = copy
        return copy

    def _copy(self, source: torch.Tensor) -> torch.Tensor:
        if source.layout != torch.strided or source.is_conj() or source.is_neg():
            return source.resolve_conj().resolve_neg().to(self.device, copy=True)
        storage = source.untyped_storage()
        itemsize = source.element_size()
        if storage.nbytes() == 0:
            return torch.empty_strided(
                source.size(), source.stride(), dtype=source.dtype, device=self.device
            )
        if storage.nbytes() % itemsize != 0:  # a storage shared with another dtype
            return source.to(self.device, copy=True)
        key = (storage.data_ptr(), storage.nbytes())
        flat = self.storages.get(key)
        if flat is None or flat.dtype != source.dtype:
            host = torch.empty(0, dtype=source.dtype).set_(
                storage, 0, (storage.nbytes() // itemsize,), (1,)
            )
            flat = host.to(self.device, copy=True)
            self.storages[key] = flat
        return flat.as_strided(source.size(), source.stride(), source.storage_offset())

    def value(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return self.tensor(value)
        if isinstance(value, torch.device):
            return self.device if value.type == "cpu" else value
        if isinstance(value, str) and value == "cpu":
            return self.device.type
        if isinstance(value, torch.Size):
            return value
        if isinstance(value, tuple):
            items = [self.value(item) for item in value]
            return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        return value


@dataclasses.dataclass
class Call:
    input: Any
    args: tuple
    kwargs: dict

    def tensors(self) -> list[torch.Tensor]:
        return list(iter_tensors((self.input, self.args, self.kwargs)))

    def device(self) -> str:
        """Where results belong: openreg if any tensor or device argument is on openreg."""
        def on_device(value: Any) -> bool:
            if isinstance(value, torch.Tensor):
                return value.device.type == DEVICE
            if isinstance(value, torch.device):
                return value.type == DEVICE
            if isinstance(value, str):
                return value.split(":")[0] == DEVICE
            if isinstance(value, (list, tuple)):
                return any(on_device(item) for item in value)
            if isinstance(value, dict):
                return any(on_device(item) for item in value.values())
            return False

        return DEVICE if on_device((self.input, self.args, self.kwargs)) else "cpu"


# Positional arguments that the op requires on the CPU whatever the device of the input
# (PyTorch rejects them elsewhere), so they are not moved to openreg.
CPU_ARGUMENTS: dict[str, frozenset[int]] = {
    "tensor_split": frozenset({0}),  # tensor_indices_or_sections "to be on cpu"
}


def copy_sample(sample: Any, device: str, cpu_arguments: frozenset[int] = frozenset()) -> Call:
    copier, host = _Copier(device), _Copier("cpu")
    args = tuple(
        (host if index in cpu_arguments else copier).value(argument)
        for index, argument in enumerate(sample.args)
    )
    return Call(copier.value(sample.input), args, copier.value(dict(sample.kwargs)))


def iter_tensors(value: Any) -> Iterable[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from iter_tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from iter_tensors(item)


# ----------------------------------------------------------------------------------------
# Comparing


class Mismatch(AssertionError):
    pass


@dataclasses.dataclass
class Tolerance:
    atol: float | None = None
    rtol: float | None = None
    exact: bool = False
    values: bool = True  # False: uninitialised outputs, compare metadata only

    def kwargs(self) -> dict:
        if self.exact:
            return {"atol": 0.0, "rtol": 0.0}
        if self.atol is None and self.rtol is None:
            return {}
        return {"atol": self.atol or 0.0, "rtol": self.rtol or 0.0}


def to_host(tensor: torch.Tensor) -> torch.Tensor:
    """The only way device data reaches the host here."""
    return tensor.detach().cpu()


def _layout(tensor: torch.Tensor) -> tuple[int | None, ...]:
    """Strides that matter: those of dimensions longer than 1 (none if it is empty)."""
    if tensor.numel() <= 1:
        return ()
    return tuple(s if n > 1 else None for n, s in zip(tensor.shape, tensor.stride()))


def storage_key(tensor: torch.Tensor) -> int | None:
    if tensor.layout != torch.strided:
        return None
    storage = tensor.untyped_storage()
    return storage.data_ptr() if storage.nbytes() > 0 else None


def compare(cpu: Any, dev: Any, tolerance: Tolerance, where: str = "output",
            device: str = DEVICE) -> None:
    """``device``: where ``dev``'s tensors must be (the CPU when the call had no openreg
    tensor or device argument, e.g. ``torch.arange(3)``)."""
    if isinstance(cpu, torch.Tensor):
        if not isinstance(dev, torch.Tensor):
            raise Mismatch(f"{where}: CPU gives a tensor, openreg gives {type(dev).__name__}")
        if cpu.device.type == "cpu" and dev.device.type != device:
            raise Mismatch(f"{where}: result is on {dev.device}, expected a {device} tensor")
        if cpu.dtype != dev.dtype or cpu.shape != dev.shape:
            raise Mismatch(
                f"{where}: CPU gives {cpu.dtype}{list(cpu.shape)}, "
                f"openreg {dev.dtype}{list(dev.shape)}"
            )
        if cpu.layout != dev.layout:
            raise Mismatch(f"{where}: layout {dev.layout}, CPU {cpu.layout}")
        if cpu.layout == torch.strided and _layout(cpu) != _layout(dev):
            raise Mismatch(f"{where}: strides {dev.stride()}, CPU {cpu.stride()}")
        if cpu.is_conj() != dev.is_conj() or cpu.is_neg() != dev.is_neg():
            raise Mismatch(f"{where}: conj/neg bits differ from CPU")
        if tolerance.values:
            host = to_host(dev)
            expected = cpu.detach()
            if expected.layout != torch.strided:
                expected, host = expected.to_dense(), host.to_dense()
            try:
                torch.testing.assert_close(
                    host, expected, equal_nan=True, check_device=False, **tolerance.kwargs()
                )
            except AssertionError as error:
                raise Mismatch(f"{where}: {error}") from None
        return
    if isinstance(dev, torch.Tensor):
        raise Mismatch(f"{where}: CPU gives {type(cpu).__name__}, openreg gives a tensor")
    if isinstance(cpu, (list, tuple)) and not isinstance(cpu, torch.Size):
        if not isinstance(dev, (list, tuple)) or len(cpu) != len(dev):
            raise Mismatch(
                f"{where}: CPU gives {type(cpu).__name__} of {len(cpu)}, openreg {dev!r:.80}"
            )
        if type(cpu) is not type(dev):
            raise Mismatch(f"{where}: CPU gives {type(cpu).__name__}, openreg {type(dev).__name__}")
        for index, (a, b) in enumerate(zip(cpu, dev)):
            compare(a, b, tolerance, f"{where}[{index}]", device)
        return
    if isinstance(cpu, dict):
        if not isinstance(dev, dict) or cpu.keys() != dev.keys():
            raise Mismatch(f"{where}: dict keys differ")
        for key in cpu:
            compare(cpu[key], dev[key], tolerance, f"{where}[{key!r}]", device)
        return
    if isinstance(cpu, float) and isinstance(dev, float) and tolerance.values:
        if math.isnan(cpu) and math.isnan(dev):
            return
        try:
            torch.testing.assert_close(dev, cpu, **tolerance.kwargs())
        except AssertionError as error:
            raise Mismatch(f"{where}: {error}") from None
        return
    if isinstance(cpu, torch.device) or (isinstance(cpu, str) and cpu == "cpu"):
        return  # e.g. a returned device; checked through the tensors
    if tolerance.values and cpu != dev:
        raise Mismatch(f"{where}: CPU gives {cpu!r:.80}, openreg {dev!r:.80}")


def alias_map(outputs: Any, inputs: list[torch.Tensor]) -> list[tuple[int, ...]]:
    """For each output tensor, the indices of the inputs whose storage it shares."""
    keys = [storage_key(tensor) for tensor in inputs]
    result = []
    for output in iter_tensors(outputs):
        key = storage_key(output)
        result.append(tuple(i for i, k in enumerate(keys) if key is not None and k == key))
    return result


def compare_inputs(cpu: Call, dev: Call, tolerance: Tolerance) -> None:
    """Arguments after the call (mutations must be the same, e.g. running statistics)."""
    for index, (a, b) in enumerate(zip(cpu.tensors(), dev.tensors())):
        compare(a, b, tolerance, f"input tensor {index} after the call", b.device.type)


# ----------------------------------------------------------------------------------------
# Running


@dataclasses.dataclass
class Outcome:
    check: str
    sample: int
    status: str  # "pass" | "fail" | "skip"
    message: str = ""


def _short(error: BaseException) -> str:
    text = str(error).strip()
    first = text.splitlines()[0] if text else ""
    if isinstance(error, Mismatch):
        return " ".join(text.split())[:500]
    return f"{type(error).__name__}: {first}"[:500]


def _frame(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    return f" [{frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}]" if frames else ""


def seed_compared_devices(seed: int) -> None:
    """What ``torch.manual_seed(seed)`` does for the two devices compared here: the CPU's
    and every openreg device's default generator. torch.manual_seed also queues a seed for
    CUDA, XPU and MTIA, each time capturing a Python stack trace (kept for lazy-init
    errors): ~0.26 ms a call, two thirds of this harness's time (cProfile of
    logspace.tensor_overload: 9.6 of 14.1 s; the full sweep went from 756 to 263 s)."""
    torch.default_generator.manual_seed(seed)
    torch.get_device_module(DEVICE).manual_seed_all(seed)


def reseeded_samples(op: Any, dtype: torch.dtype, requires_grad: bool) -> list[Any]:
    """``op.sample_inputs`` on the CPU, reseeded before each sample as OpInfo's own iterator
    does (``set_rng_seed(SEED)``: the CPU generator, ``random`` and NumPy), so the samples
    are the same values, without torch.manual_seed's cost (seed_compared_devices)."""
    source = op.sample_inputs("cpu", dtype, requires_grad=requires_grad, set_seed=False)
    samples = []
    while True:
        torch.default_generator.manual_seed(common_utils.SEED)
        random.seed(common_utils.SEED)
        numpy.random.seed(common_utils.SEED)
        try:
            samples.append(next(source))
        except StopIteration:
            return samples


def _run(function: Callable, call: Call, seed: int) -> Any:
    seed_compared_devices(seed)
    return function(call.input, *call.args, **call.kwargs)


def _weights(outputs: list[torch.Tensor]) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(7)
    return [
        (
            torch.randn(t.shape, generator=generator, dtype=t.real.dtype),
            torch.randn(t.shape, generator=generator, dtype=t.real.dtype),
        )
        for t in outputs
    ]


def _loss(outputs: list[torch.Tensor], weights, device: str) -> torch.Tensor:
    total = None
    for tensor, (real, imag) in zip(outputs, weights):
        if tensor.is_complex():
            term = (tensor.real * real.to(device)).sum() + (tensor.imag * imag.to(device)).sum()
        else:
            term = (tensor * real.to(device)).sum()
        total = term if total is None else total + term
    return total


def differentiable(outputs: Any) -> list[torch.Tensor]:
    return [
        t
        for t in iter_tensors(outputs)
        if t.requires_grad and (t.is_floating_point() or t.is_complex())
    ]


class OpChecker:
    """Runs the checks of one OpInfo over its samples."""

    def __init__(self, op: Any, tolerance: Tolerance | None = None, dtype: torch.dtype = DTYPE):
        self.op = op
        self.name = op.full_name
        self.dtype = dtype
        base = tolerance or Tolerance()
        if self.name in RANDOM_OPS:
            base = dataclasses.replace(base, exact=True)
        self.tolerance = base

    def copies(self, sample: Any) -> tuple[Call, Call]:
        """The sample on the CPU and on openreg, both fresh (ops may mutate them)."""
        keep = CPU_ARGUMENTS.get(self.name, frozenset())
        return copy_sample(sample, "cpu"), copy_sample(sample, DEVICE, keep)

    def samples(self, requires_grad: bool) -> list[Any]:
        return reseeded_samples(self.op, self.dtype, requires_grad)

    def run(self, checks: Iterable[str] = CHECKS) -> list[Outcome]:
        checks = set(checks)
        outcomes: list[Outcome] = []
        if checks & {"forward", "method", "inplace", "out"}:
            for index, sample in enumerate(self.samples(False)):
                outcomes += self.forward_checks(index, sample, checks)
        if "grad" in checks and self.op.supports_autograd and self.dtype.is_floating_point:
            for index, sample in enumerate(self.samples(True)):
                outcomes.append(self.guarded("grad", index, self.grad_check, sample))
        torch.openreg.synchronize()
        return outcomes

    def guarded(self, check: str, index: int, function: Callable, *args) -> Outcome:
        try:
            result = function(*args)
        except Mismatch as error:
            return Outcome(check, index, "fail", _short(error))
        except Exception as error:  # an openreg-side error (CPU errors are caught inside)
            return Outcome(check, index, "fail", _short(error) + _frame(error))
        if result is not None:
            return Outcome(check, index, "skip", result)
        return Outcome(check, index, "pass")

    def forward_checks(self, index: int, sample: Any, checks: set[str]) -> list[Outcome]:
        outcomes = []
        state: dict[str, Any] = {}
        if "forward" in checks or "out" in checks:
            outcomes.append(self.guarded("forward", index, self.forward, sample, state))
            if "forward" not in checks:
                outcomes.pop()
        if "method" in checks and self.op.method_variant is not None:
            outcomes.append(self.guarded("method", index, self.method, sample))
        if "inplace" in checks and self.op.inplace_variant is not None:
            if sample.broadcasts_input:
                outcomes.append(Outcome("inplace", index, "skip", "sample broadcasts its input"))
            else:
                outcomes.append(self.guarded("inplace", index, self.inplace, sample))
        if "out" in checks and self.op.supports_out and "cpu_result" in state:
            outcomes.append(self.guarded("out", index, self.out, sample, state["cpu_result"]))
        return outcomes

    # -- the checks: return None on success, a string to skip (CPU cannot run it) --------

    def forward(self, sample: Any, state: dict) -> str | None:
        return self.compare_variant(self.op, sample, state)

    def method(self, sample: Any) -> str | None:
        return self.compare_variant(self.op.method_variant, sample, {})

    def compare_variant(self, variant: Callable, sample: Any, state: dict) -> str | None:
        cpu, dev = self.copies(sample)
        try:
            expected = _run(variant, cpu, SEED)
        except Exception as error:
            return f"CPU raises {_short(error)}"
        state["cpu_result"] = expected
        actual = _run(variant, dev, SEED)
        compare(expected, actual, self.tolerance, device=dev.device())
        cpu_aliases = alias_map(expected, cpu.tensors())
        dev_aliases = alias_map(actual, dev.tensors())
        if cpu_aliases != dev_aliases:
            raise Mismatch(
                f"aliasing: outputs share storage with inputs {dev_aliases}, on CPU {cpu_aliases}"
            )
        compare_inputs(cpu, dev, self.tolerance)
        return None

    def inplace(self, sample: Any) -> str | None:
        variant = self.op.inplace_variant
        cpu, dev = self.copies(sample)
        try:
            expected = _run(variant, cpu, SEED)
        except Exception as error:
            return f"CPU raises {_short(error)}"
        actual = _run(variant, dev, SEED)
        if expected is cpu.input and actual is not dev.input:
            raise Mismatch("in-place variant did not return its input")
        compare(expected, actual, self.tolerance, device=dev.device())
        compare_inputs(cpu, dev, self.tolerance)
        return None

    def out(self, sample: Any, cpu_result: Any) -> str | None:
        if "out" in sample.kwargs:
            return "sample passes out= itself"
        results = cpu_result if isinstance(cpu_result, (tuple, list)) else (cpu_result,)
        if not results or not all(isinstance(r, torch.Tensor) for r in results):
            return "result is not a tensor or tuple of tensors"

        def outs(device: str):
            made = [torch.empty(0, dtype=r.dtype, device=device) for r in results]
            return made[0] if isinstance(cpu_result, torch.Tensor) else tuple(made)

        cpu, dev = self.copies(sample)
        cpu_out, dev_out = outs("cpu"), outs(DEVICE)
        try:
            seed_compared_devices(SEED)
            expected = self.op(cpu.input, *cpu.args, **cpu.kwargs, out=cpu_out)
        except Exception as error:
            return f"CPU raises {_short(error)}"
        seed_compared_devices(SEED)
        actual = self.op(dev.input, *dev.args, **dev.kwargs, out=dev_out)
        compare(cpu_out, dev_out, self.tolerance, "out tensor")
        compare(expected, actual, self.tolerance, "returned value")  # out= is on openreg
        returned = list(iter_tensors(actual))
        given = list(iter_tensors(dev_out))
        expected_identity = [a is b for a, b in zip(iter_tensors(expected), iter_tensors(cpu_out))]
        if [a is b for a, b in zip(returned, given)] != expected_identity:
            raise Mismatch("out= variant did not return the out tensors it was given")
        compare_inputs(cpu, dev, self.tolerance)
        return None

    def grad_check(self, sample: Any) -> str | None:
        cpu, dev = self.copies(sample)
        cpu_leaves = [t for t in cpu.tensors() if t.requires_grad]
        dev_leaves = [t for t in dev.tensors() if t.requires_grad]
        if not cpu_leaves:
            return "no input requires grad"
        try:
            expected = sample.output_process_fn_grad(_run(self.op, cpu, SEED))
            cpu_outputs = differentiable(expected)
            if not cpu_outputs:
                return "no differentiable output"
            weights = _weights(cpu_outputs)
            cpu_grads = torch.autograd.grad(
                _loss(cpu_outputs, weights, "cpu"), cpu_leaves, allow_unused=True
            )
        except Exception as error:
            return f"CPU raises {_short(error)}"
        actual = sample.output_process_fn_grad(_run(self.op, dev, SEED))
        dev_outputs = differentiable(actual)
        compare(
            [t.detach() for t in cpu_outputs], [t.detach() for t in dev_outputs], self.tolerance,
            "differentiable outputs", dev.device(),
        )
        dev_grads = torch.autograd.grad(
            _loss(dev_outputs, weights, DEVICE), dev_leaves, allow_unused=True
        )
        for index, (a, b) in enumerate(zip(cpu_grads, dev_grads)):
            if (a is None) != (b is None):
                raise Mismatch(
                    f"grad of input {index}: defined on CPU {a is not None}, "
                    f"on openreg {b is not None}"
                )
            if a is not None:
                compare(a, b, self.tolerance, f"grad of input {index}", dev.device())
        return None


def check_op(op: Any, expectations: list[Expectation] | None = None, checks=CHECKS,
             mode: str | None = None, dtype: torch.dtype = DTYPE) -> tuple[list[Outcome], float]:
    """Run ``op`` with the tolerances/metadata-only flags of its expectations."""
    mode = mode or fallback_mode()
    tolerance = Tolerance()
    for entry in expectations or []:
        if not entry.applies(mode, dtype):
            continue
        if entry.kind == "tolerance":
            tolerance = dataclasses.replace(tolerance, atol=entry.atol, rtol=entry.rtol)
        elif entry.kind == "metadata":
            tolerance = dataclasses.replace(tolerance, values=False)
    start = time.perf_counter()
    outcomes = OpChecker(op, tolerance, dtype).run(checks)
    return outcomes, time.perf_counter() - start
