#pragma once

// Kernels of the custom operators openreg_ops_extra adds to the `openreg` namespace.

#include <ATen/core/Tensor.h>

namespace at::native::openreg_extra {

// openreg::custom_abs (PrivateUse1): |input|, through abs.out and so through the abs_stub
// kernel; complex inputs give real results, like torch.abs. Forward only.
at::Tensor custom_abs(const at::Tensor& input);

// openreg::custom_square (PrivateUse1): input * input as an openreg device kernel.
at::Tensor custom_square(const at::Tensor& input);

// openreg::custom_square (AutogradPrivateUse1): records CustomSquareFunction, whose
// backward is grad * conj(2 * input), then runs the kernel below autograd.
at::Tensor custom_square_autograd(const at::Tensor& input);

} // namespace at::native::openreg_extra
