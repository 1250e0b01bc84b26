#pragma once

// Random operators whose PrivateUse1 route differs from the CPU's.

#include <ATen/core/Tensor.h>

namespace at::native::openreg {

// PyTorch sends dropout on accelerators (not on the CPU) to the fused native_dropout.
// This kernel draws and scales the noise exactly as the CPU's dropout does, so the same
// seed keeps giving the CPU's numbers.
std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p,
                                                  std::optional<bool> train);

} // namespace at::native::openreg
