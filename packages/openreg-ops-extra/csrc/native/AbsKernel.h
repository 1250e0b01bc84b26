#pragma once

// abs for openreg through PyTorch's dispatch stub `abs_stub` (ATen/native/UnaryOps.h).

#include <ATen/TensorIterator.h>

#include <cstdint>

namespace at::native::openreg_extra {

// The openreg kernel of abs_stub: out = |in| over a unary TensorIterator whose operands
// live in openreg device memory. Complex inputs give complex outputs holding |z| + 0i
// (abs.out turns them into real results, as for CPU and CUDA).
void abs_kernel(TensorIteratorBase& iter);

// How many times abs_kernel has run in this process (lets tests prove the stub ran).
int64_t abs_kernel_calls();

} // namespace at::native::openreg_extra
