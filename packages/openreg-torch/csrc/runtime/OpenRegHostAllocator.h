#pragma once

// The pinned host allocator, after at::cuda::getCachingHostAllocator: page-locked host
// memory from orMallocHost, cached by PyTorch's CachingHostAllocatorImpl. A block that an
// asynchronous copy still reads or writes is not reused before that copy's stream has
// passed it.

#include <ATen/core/CachingHostAllocator.h>
#include <c10/core/Stream.h>

#include "runtime/OpenRegMacros.h"

namespace c10::openreg {

OPENREG_TORCH_API at::HostAllocator* getPinnedHostAllocator();
// Whether `ptr` lies in pinned memory of the runtime (anywhere inside an allocation).
OPENREG_TORCH_API bool isPinnedPointer(const void* ptr);
// Called by asynchronous copies: the block holding `ptr` is in use on `stream`.
OPENREG_TORCH_API void recordHostUse(const void* ptr, Stream stream);
OPENREG_TORCH_API void emptyHostCache();

} // namespace c10::openreg
