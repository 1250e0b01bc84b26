#pragma once

// cat's copy-only case (the role of the fast paths of CUDA's Shape.cu).

#include <ATen/core/IListRef.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/MemoryFormat.h>

#include <string_view>

namespace at::native::openreg {

// When `out` (allocated by cat's meta()) is nothing but `tensors`' bytes one after another
// (contiguous inputs of its dtype, only size-1 dimensions before `dim`) and no input is
// large, copies them into it in one launch and says so. A kernel-view alias per input
// cost more than the copies: torch.cat and torch.stack of 200 small tensors took 1.5-3
// times the CPU's time on aliases.
bool cat_by_copies(c10::Device device, std::string_view name, const at::ITensorListRef& tensors,
                   const at::Tensor& out, int64_t dim, bool all_contiguous, bool all_same_dtype,
                   c10::MemoryFormat memory_format);

} // namespace at::native::openreg
