#pragma once

// Histograms with CUDA's dtype coverage (SummaryOps.cu's twin).

#include <ATen/core/Tensor.h>

namespace at::native::openreg {

// torch.histc: the CPU's kernel on device memory, and integer tensors counted too, as
// CUDA counts them (the CPU's kernel takes floating types only). Libraries rely on it
// off the CPU: transformers' mixture-of-experts routing counts tokens per expert with
// histc of an int tensor on every device but the CPU and MPS.
at::Tensor histc(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                 const at::Scalar& max);

} // namespace at::native::openreg
