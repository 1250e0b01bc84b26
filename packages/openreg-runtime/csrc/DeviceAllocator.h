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
#include <vector>

#include "Arena.h"

namespace openreg {

// Free regions holding at least this many whole pages go back to the OS.
constexpr size_t kPunchThreshold = size_t(1) << 20;

// A live allocation as the caller sees it (device-view address, requested size).
struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;
};

// What a memory IPC handle records about an allocation.
struct ExportInfo {
  size_t offset = 0;    // in the arena (and its memory file)
  size_t size = 0;      // as requested from orMalloc
  uint64_t serial = 0;  // unique per allocation: a reused block has a new one
  uint64_t ticket = 0;  // unique per handle, "unopened" until opened
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

  // IPC. Memory other processes have open stays allocated when freed here,
  // until the last of them closes it: release() then only marks the block
  // freed (it is no longer live for this process, and cannot be opened
  // again). Tickets record handles not opened yet, for orIpcGetMemRefCount.
  //
  // A new handle's data for the live allocation starting at `ptr`.
  orError_t exportAllocation(uintptr_t ptr, ExportInfo* out);
  // A further ticket for an allocation named by (offset, serial), for an
  // importer re-exporting it; orErrorIpcHandleStale when freed.
  orError_t issueTicket(size_t offset, uint64_t serial, uint64_t* ticket);
  // An importer opens (offset, serial) with `ticket`: the ticket is used up
  // and the block counts one more open. Sets *size, the mapping's needs.
  orError_t acquireImport(size_t offset, uint64_t serial, uint64_t ticket, size_t* size);
  void releaseImport(size_t offset, uint64_t serial);
  void discardTicket(size_t offset, uint64_t serial, uint64_t ticket);
  orError_t refCounts(uintptr_t ptr, int* opens, int* unopened);
  // The arena's memory file and mapped size, for importers (0/-1 unmapped).
  int arenaFd() const { return arena_.fd(); }
  size_t arenaSize() const { return arena_.size(); }

 private:
  struct Block {
    size_t size = 0;       // rounded, what the block occupies
    size_t requested = 0;  // what orMalloc was asked for (0 when free)
    bool free = true;
    bool dirty = false;    // free, but its pages may still be resident
    // IPC (live blocks only).
    uint64_t serial = 0;
    int imports = 0;      // opens held by other processes
    bool freed = false;   // released here while imports > 0
    std::vector<uint64_t> unopened;  // tickets of handles not opened yet
  };
  using BlockMap = std::map<size_t, Block>;  // keyed by offset

  bool findLocked(uintptr_t p, Allocation* out);
  void insertFree(size_t offset, size_t size, bool dirty);
  void eraseFree(BlockMap::iterator it);
  void maybePunch(BlockMap::iterator it);
  void freeBlockLocked(BlockMap::iterator it);
  // The live (or freed-but-imported) block named by a handle, or end().
  BlockMap::iterator exportedLocked(size_t offset, uint64_t serial);

  std::mutex mutex_;
  int device_ = 0;
  size_t capacity_ = 0;
  size_t used_ = 0;  // sum of the rounded sizes of live allocations
  Arena arena_;
  BlockMap blocks_;
  std::set<std::pair<size_t, size_t>> freeBySize_;  // (size, offset)
  uint64_t nextSerial_ = 1;
  uint64_t nextTicket_ = 1;
};

}  // namespace openreg
