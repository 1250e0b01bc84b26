"""Meta ("fake") kernels of the custom operators, in Python.

They give an operator's output metadata (shape, strides, dtype, device) without running
it, which is what FakeTensorMode, torch.compile and meta tensors need. The real kernels
promise the same layout: an output like the input (real for complex custom_abs).
"""

import torch


# DOC START: custom-abs-meta
@torch.library.register_fake("openreg::custom_abs")
def _custom_abs_meta(input: torch.Tensor) -> torch.Tensor:
    dtype = input.dtype.to_real() if input.is_complex() else input.dtype
    return torch.empty_like(input, dtype=dtype)
# DOC END: custom-abs-meta


@torch.library.register_fake("openreg::custom_square")
def _custom_square_meta(input: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(input)
