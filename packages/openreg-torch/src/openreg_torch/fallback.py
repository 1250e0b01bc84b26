"""How operators without an openreg kernel run: the fallback.

The mode is chosen by ``OPENREG_FALLBACK`` when openreg loads:

- ``zero-copy`` (default): the CPU kernel runs directly on device memory;
- ``copy``: PyTorch's ``cpu_fallback``: inputs copied to the host, the CPU kernel
  runs, results copied back (what the seed documents describe; slower);
- ``selective``: nothing falls back unless allowed operator by operator with
  :func:`allow`; any other operator raises PyTorch's NotImplementedError.

:func:`deny` does the opposite in the other modes: the named operators raise instead
of falling back. Both register a per-operator PrivateUse1 kernel (``m.impl``), which
takes precedence over the global fallback (``m.fallback``).
"""

from . import _C

__all__ = ["mode", "allow", "deny", "route_of"]


def mode() -> str:
    """The fallback mode in force: "zero-copy", "copy" or "selective"."""
    return _C._fallback_mode()


def route_of(operator: str) -> str:
    """Which route serves `operator` (e.g. "aten::add.Tensor") on openreg now: "direct
    kernel", "zero-copy fallback", "copy fallback", "composite" (PyTorch decomposes it
    into other operators), "own kernel" (an openreg kernel of its own, in this package or
    another, e.g. openreg-ops-extra) or "denied" (it raises NotImplementedError)."""
    return _C._route_of(operator)


def allow(*operators: str) -> None:
    """Let these operators (e.g. "aten::add.Tensor") fall back even in selective mode. The
    fallback then serves them in place of any route they had (a direct kernel included)."""
    for operator in operators:
        _C._register_fallback_for(operator, True)


def deny(*operators: str) -> None:
    """Make these operators raise NotImplementedError, in any mode and whatever route served
    them (the fallback, a direct kernel, a lean lane or an own kernel)."""
    for operator in operators:
        _C._register_fallback_for(operator, False)
