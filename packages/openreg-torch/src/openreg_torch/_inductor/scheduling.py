"""Kernel generation for openreg: Inductor's C++ CPU scheduling, unchanged.

openreg memory is host memory behind a kernel view, so the loops Inductor writes for
the CPU are the device's kernels; only how they are loaded and called differs, and that
is the wrapper's business (wrapper.py, kernel_launch.py). The twin of CUDA's
CUDACombinedScheduling (which picks Triton); here the C++ backend is the only one.
"""

from torch._inductor.codegen.cpp import CppScheduling


class OpenRegScheduling(CppScheduling):
    pass
