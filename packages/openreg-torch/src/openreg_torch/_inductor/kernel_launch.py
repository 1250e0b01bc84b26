"""Loading and launching openreg kernels: the twin of the launcher Inductor wraps around
a compiled CUDA kernel.

Inductor compiles a C++ kernel for the CPU as a small Python extension whose binding
reads each tensor's data pointer and calls the kernel on the calling thread. On openreg
that pointer is a device address, which the host must not dereference. So the generated
source gets one more entry point, ``openreg_kernel_entry(void* const* args)``, that takes
one address per argument and calls the kernel with its typed signature; the wrapper calls
an ``openreg_torch._C._CompiledKernel`` instead of the binding, which translates each
openreg tensor to its kernel-view address and runs the entry through the execution
layer's launch point on the current openreg stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from .. import _C

ENTRY_SYMBOL = "openreg_kernel_entry"


def argument_kinds(arg_types: Sequence[str]) -> str:
    """One letter per kernel argument: 'p' pointer, 'f' float, 'i' int64_t."""
    kinds = []
    for arg_type in arg_types:
        base = arg_type.replace("const ", "").strip()
        if base.endswith("*"):
            kinds.append("p")
        elif base == "float":
            kinds.append("f")
        elif base in ("int64_t", "long", "int64"):
            kinds.append("i")
        else:
            raise NotImplementedError(
                f"openreg: compiled kernel argument of C++ type {arg_type!r} is not supported"
            )
    return "".join(kinds)


# DOC START: kernel-entry
def entry_source(arg_types: Sequence[str]) -> str:
    """C++ of the packed entry point: argument i is at args[i] (pointers are the
    kernel-view addresses themselves, scalars are stored where args[i] points)."""
    unpacked = []
    for index, arg_type in enumerate(arg_types):
        base = arg_type.replace("const ", "").strip()
        if base.endswith("*"):
            unpacked.append(f"static_cast<{arg_type}>(args[{index}])")
        else:
            unpacked.append(f"*static_cast<const {base}*>(args[{index}])")
    call = ", ".join(unpacked)
    return (
        "\n// openreg: the entry point openreg_torch._C._CompiledKernel launches.\n"
        f'extern "C" __attribute__((visibility("default"))) void {ENTRY_SYMBOL}('
        "void* const* args) {\n"
        f"    kernel({call});\n"
        "}\n"
    )
# DOC END: kernel-entry


def openreg_cpp_kernel(async_compile: Any, name: str, arg_types: list[str], source: str) -> Any:
    """What generated openreg wrapper code calls in place of
    ``async_compile.cpp_pybinding(arg_types, source)``: the same compilation (and the
    same caches), returning a launcher (or a future of one, when compiling in parallel)."""
    from torch._inductor.codecache import CodeCacheFuture, LambdaFuture

    kinds = argument_kinds(arg_types)
    loaded = async_compile.cpp_pybinding(arg_types, source + entry_source(arg_types))
    if isinstance(loaded, CodeCacheFuture):
        return LambdaFuture(lambda: _launcher(name, loaded.result(), kinds))
    return _launcher(name, loaded, kinds)


def _launcher(name: str, binding: Any, kinds: str) -> Any:
    # `binding` is the extension module's `kernel` function; its module is the library.
    library = binding.__self__.__file__
    return _C._CompiledKernel(name, library, kinds)


def get_raw_stream(device_index: int) -> int:
    """The current stream's runtime handle (Inductor's get_raw_stream on CUDA)."""
    return torch.openreg.current_stream(device_index).native_handle
