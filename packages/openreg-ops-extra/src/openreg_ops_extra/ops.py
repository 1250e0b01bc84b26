"""The custom operators of openreg_ops_extra, one per way of writing one.

======================  ==========================================================
``custom_abs``          forward only: C++ kernel, autograd fallback, Python meta
``custom_square``       forward and backward registered separately (C++ autograd)
``differentiable_abs``  forward and backward in a Python ``torch.autograd.Function``
======================  ==========================================================
"""

import torch

__all__ = ["custom_abs", "custom_square", "differentiable_abs"]


def custom_abs(input: torch.Tensor) -> torch.Tensor:
    """``torch.ops.openreg.custom_abs``: |input| on openreg, without a backward."""
    return torch.ops.openreg.custom_abs(input)


def custom_square(input: torch.Tensor) -> torch.Tensor:
    """``torch.ops.openreg.custom_square``: input * input on openreg, differentiable."""
    return torch.ops.openreg.custom_square(input)


# DOC START: autograd-function
class _DifferentiableAbs(torch.autograd.Function):
    """|input| with a backward: custom_abs forward, device operators backward."""

    @staticmethod
    def forward(input: torch.Tensor) -> torch.Tensor:
        # Grad mode is off in here, so custom_abs's autograd fallback does not interfere.
        return torch.ops.openreg.custom_abs(input)

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        (input,) = inputs
        ctx.save_for_backward(input)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (input,) = ctx.saved_tensors
        return grad * input.sgn()  # torch.abs's derivative, for complex inputs too
# DOC END: autograd-function


def differentiable_abs(input: torch.Tensor) -> torch.Tensor:
    """|input| on openreg through a Python ``torch.autograd.Function`` (has a backward)."""
    return _DifferentiableAbs.apply(input)
