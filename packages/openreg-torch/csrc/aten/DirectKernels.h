#pragma once

// Direct (unboxed) kernels for the hottest operators: the boxed fallback's work without
// the stack (execution/RunOnDevice.h). Zero-copy mode only: the copy and selective
// modes keep the seed's behaviour for every operator.

#include <torch/library.h>

namespace at::openreg {

// Registers them on `library` (aten, PrivateUse1); returns how many.
size_t register_direct_kernels(torch::Library& library);

} // namespace at::openreg
