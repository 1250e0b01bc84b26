"""Kernel generation for openreg: Inductor's C++ CPU scheduling.

openreg memory is host memory behind a kernel view, so the loops Inductor writes for
the CPU are the device's kernels; only how they are loaded and called differs, and that
is the wrapper's business (wrapper.py, kernel_launch.py). The twin of CUDA's
CUDACombinedScheduling (which picks Triton); here the C++ backend is the only one.
"""

from __future__ import annotations

import functools
from typing import Any

from torch._inductor import config
from torch._inductor.codegen.cpp import CppScheduling

# DOC START: cpu-exemptions
# Inductor's scheduler skips a few loop-reordering heuristics for CPU nodes
# (`if node.is_cpu(): return -1`): they assume the (numel, rnumel) kernel groups of the
# SIMD backends, which C++ kernels do not have. openreg nodes are C++ kernels too, so the
# scheduler of a graph with openreg nodes answers for them as it does for the CPU. Only
# that scheduler object is changed, when it creates openreg's backend (while creating
# its first openreg node, before any fusion).
_CPU_ANSWERS = {
    "shared_data_after_reordering_loop": -1,
    "shared_data_after_inverting_indexing": -1,
    "_try_reindex_pointwise_for_reduction": False,
}
# DOC END: cpu-exemptions


def _on_openreg(node: Any) -> bool:
    device = node.get_device()
    return device is not None and device.type == "openreg"


def _answer_as_for_the_cpu(scheduler: Any) -> None:
    for name, answer in _CPU_ANSWERS.items():
        original = getattr(scheduler, name, None)
        if original is None or getattr(original, "_openreg_exempt", False):
            continue

        def exempt(node1, node2, *args, _original=original, _answer=answer, **kwargs):
            if _on_openreg(node1) or _on_openreg(node2):
                return _answer
            return _original(node1, node2, *args, **kwargs)

        exempt._openreg_exempt = True
        setattr(scheduler, name, exempt)


# DOC START: cpp-backend
# While Inductor writes a kernel, its code generation asks which language it writes
# (utils.get_current_backend): "cpp" for the CPU, `config.cuda_backend` ("triton") for
# any other device type. openreg's kernels are C++: the question gets the CPU's answer,
# for as long as openreg's scheduling generates code.
def _writes_cpp(method):
    @functools.wraps(method)
    def generate(self, *args, **kwargs):
        with config.patch(cuda_backend="cpp"):
            return method(self, *args, **kwargs)

    return generate
# DOC END: cpp-backend


class OpenRegScheduling(CppScheduling):
    def __init__(self, scheduler: Any) -> None:
        super().__init__(scheduler)
        if scheduler is not None:
            _answer_as_for_the_cpu(scheduler)

    codegen_node = _writes_cpp(CppScheduling.codegen_node)
    codegen_template = _writes_cpp(CppScheduling.codegen_template)
    codegen_outer_loop_node = _writes_cpp(CppScheduling.codegen_outer_loop_node)
    flush = _writes_cpp(CppScheduling.flush)
