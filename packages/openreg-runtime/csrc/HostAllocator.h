// Pinned ("page-locked") host memory: page-aligned mappings the runtime
// registers, so copies can tell them from ordinary pageable memory.
#pragma once

#include <openreg/openreg.h>

#include <cstddef>
#include <cstdint>

namespace openreg {

struct HostRange {
  uintptr_t base = 0;
  size_t size = 0;
};

orError_t hostAllocate(size_t size, void** ptr);
orError_t hostRelease(void* ptr);
// The pinned allocation containing `p`, if any.
bool findPinned(uintptr_t p, HostRange* out);

}  // namespace openreg
