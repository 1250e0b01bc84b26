#pragma once

// The pinned host allocator, after at::cuda::getCachingHostAllocator: page-locked host
// memory from orMallocHost, cached by size class. A block that an asynchronous copy is
// still reading or writing is not reused before that copy's stream has passed it.

#include <c10/core/Allocator.h>
#include <c10/core/Stream.h>

#include "runtime/OpenRegMacros.h"

namespace c10::openreg {

OPENREG_TORCH_API c10::Allocator* getPinnedHostAllocator();
OPENREG_TORCH_API bool isPinnedPointer(const void* ptr);
// Called by asynchronous copies: the block holding `ptr` is in use on `stream`.
OPENREG_TORCH_API void recordHostUse(const void* ptr, Stream stream);
OPENREG_TORCH_API void emptyHostCache();

} // namespace c10::openreg
