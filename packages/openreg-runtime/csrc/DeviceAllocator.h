// Sub-allocator of one device's arena: best-fit over free blocks, coalescing
// of free neighbours, exact capacity accounting, and page release (hole
// punching) for large free regions. One mutex per device, so devices never
// contend with each other.
#pragma once

#include <openreg/openreg.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "Arena.h"

namespace openreg {

// Free regions holding at least this many whole pages go back to the OS.
constexpr size_t kPunchThreshold = size_t(1) << 20;

// A live allocation as the caller sees it (device-view address, requested size).
struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;
};

class DeviceAllocator {
 public:
  void init(int device, size_t capacity);

  orError_t allocate(size_t size, void** ptr);
  // orErrorInvalidDevicePointer unless `ptr` is the start of a live allocation.
  orError_t release(uintptr_t ptr);
  // The live allocation containing `p` (interior pointers allowed).
  bool find(uintptr_t p, Allocation* out);
  // Same, for the fault handler: gives up instead of blocking when the lock
  // is held (possibly by the very thread that faulted).
  bool tryFind(uintptr_t p, Allocation* out, bool* gotLock);

  size_t capacity() const { return capacity_; }
  size_t freeBytes();

 private:
  struct Block {
    size_t size = 0;       // rounded, what the block occupies
    size_t requested = 0;  // what orMalloc was asked for (0 when free)
    bool free = true;
    bool dirty = false;    // free, but its pages may still be resident
  };
  using BlockMap = std::map<size_t, Block>;  // keyed by offset

  bool findLocked(uintptr_t p, Allocation* out);
  void insertFree(size_t offset, size_t size, bool dirty);
  void eraseFree(BlockMap::iterator it);
  void maybePunch(BlockMap::iterator it);

  std::mutex mutex_;
  int device_ = 0;
  size_t capacity_ = 0;
  size_t used_ = 0;  // sum of the rounded sizes of live allocations
  Arena arena_;
  BlockMap blocks_;
  std::set<std::pair<size_t, size_t>> freeBySize_;  // (size, offset)
};

}  // namespace openreg
