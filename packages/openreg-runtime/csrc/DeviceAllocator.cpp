// Best-fit sub-allocation of a device arena.
#include "DeviceAllocator.h"

#include <algorithm>

#include "Errors.h"
#include "ProcessUsage.h"

namespace openreg {

void DeviceAllocator::init(int device, size_t capacity) {
  device_ = device;
  capacity_ = capacity;
  // One free block spanning the whole capacity; its pages were never touched.
  insertFree(0, capacity, false);
}

size_t DeviceAllocator::freeBytes() {
  std::lock_guard<std::mutex> lock(mutex_);
  return capacity_ - used_;
}

orError_t DeviceAllocator::allocate(size_t size, void** ptr) {
  if (size > capacity_) {
    return fail(orErrorMemoryAllocation,
                "out of memory on device %d: tried to allocate %zu bytes, but the "
                "device's capacity is %zu bytes (OPENREG_DEVICE_MEMORY)",
                device_, size, capacity_);
  }
  // Cannot overflow: size <= capacity_ <= 1 TiB.
  size_t rounded = (size + OR_MEMORY_ALIGNMENT - 1) & ~size_t(OR_MEMORY_ALIGNMENT - 1);
  std::lock_guard<std::mutex> lock(mutex_);
  OR_RETURN_IF_ERROR(arena_.ensureMapped(device_, capacity_));
  auto best = freeBySize_.lower_bound({rounded, 0});
  size_t offset;
  if (best != freeBySize_.end()) {
    offset = best->second;
  } else if (!blocks_.empty() && blocks_.rbegin()->second.free &&
             blocks_.rbegin()->second.size >= size) {
    // An unaligned capacity leaves a final block shorter than a granule
    // multiple; it can still hold a request that fits it exactly.
    offset = blocks_.rbegin()->first;
  } else {
    size_t largest = freeBySize_.empty() ? 0 : freeBySize_.rbegin()->first;
    return fail(orErrorMemoryAllocation,
                "out of memory on device %d: tried to allocate %zu bytes; %zu bytes "
                "free of %zu total (largest free block %zu bytes)",
                device_, size, capacity_ - used_, capacity_, largest);
  }
  auto it = blocks_.find(offset);
  Block block = it->second;
  eraseFree(it);
  // Remainders are granule multiples, except the odd tail of an unaligned
  // capacity, which stays free at the end for a request that fits it.
  size_t taken = std::min(block.size, rounded);
  Block& fresh = blocks_[offset];
  fresh = Block();
  fresh.size = taken;
  fresh.requested = size;
  fresh.free = false;
  fresh.serial = nextSerial_++;
  if (taken < block.size) insertFree(offset + taken, block.size - taken, block.dirty);
  used_ += taken;
  publishDeviceUsage(device_, used_);
  *ptr = reinterpret_cast<void*>(arena_.viewBase() + offset);
  return orSuccess;
}

orError_t DeviceAllocator::release(uintptr_t ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t offset = ptr - arena_.viewBase();
  auto it = arena_.mapped() ? blocks_.find(offset) : blocks_.end();
  if (it == blocks_.end() || it->second.free || it->second.freed) {
    Allocation containing;
    if (findLocked(ptr, &containing)) {
      return fail(orErrorInvalidDevicePointer,
                  "cannot free %p on device %d: it points %zu bytes into the "
                  "allocation at 0x%zx; pass the pointer orMalloc returned",
                  reinterpret_cast<void*>(ptr), device_, size_t(ptr - containing.base),
                  size_t(containing.base));
    }
    return fail(orErrorInvalidDevicePointer,
                "cannot free %p on device %d: it is not a live allocation "
                "(already freed?)",
                reinterpret_cast<void*>(ptr), device_);
  }
  if (it->second.imports > 0) {
    // Other processes still map it: the block is freed when the last closes.
    it->second.freed = true;
    it->second.unopened.clear();
    return orSuccess;
  }
  freeBlockLocked(it);
  return orSuccess;
}

void DeviceAllocator::freeBlockLocked(BlockMap::iterator it) {
  size_t offset = it->first;
  size_t size = it->second.size;
  used_ -= size;
  publishDeviceUsage(device_, used_);
  blocks_.erase(it);
  size_t start = offset;
  size_t end = offset + size;
  // Coalesce with free neighbours so large requests can be served again.
  auto next = blocks_.lower_bound(end);
  if (next != blocks_.end() && next->first == end && next->second.free) {
    end += next->second.size;
    eraseFree(next);
  }
  auto prev = blocks_.lower_bound(start);
  if (prev != blocks_.begin()) {
    --prev;
    if (prev->second.free && prev->first + prev->second.size == start) {
      start = prev->first;
      eraseFree(prev);
    }
  }
  insertFree(start, end - start, true);
  maybePunch(blocks_.find(start));
}

DeviceAllocator::BlockMap::iterator DeviceAllocator::exportedLocked(size_t offset,
                                                                    uint64_t serial) {
  auto it = blocks_.find(offset);
  if (it == blocks_.end() || it->second.free || it->second.serial != serial) {
    return blocks_.end();
  }
  return it;
}

orError_t DeviceAllocator::exportAllocation(uintptr_t ptr, ExportInfo* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t offset = ptr - arena_.viewBase();
  auto it = arena_.mapped() ? blocks_.find(offset) : blocks_.end();
  if (it == blocks_.end() || it->second.free || it->second.freed) {
    Allocation containing;
    if (findLocked(ptr, &containing)) {
      return fail(orErrorInvalidDevicePointer,
                  "orIpcGetMemHandle: %p points %zu bytes into the allocation at "
                  "0x%zx on device %d; a handle names a whole allocation, so pass "
                  "the pointer orMalloc returned (and send the offset apart)",
                  reinterpret_cast<void*>(ptr), size_t(ptr - containing.base),
                  size_t(containing.base), device_);
    }
    return fail(orErrorInvalidDevicePointer,
                "orIpcGetMemHandle: %p is not a live allocation on device %d "
                "(freed?)",
                reinterpret_cast<void*>(ptr), device_);
  }
  Block& b = it->second;
  out->offset = offset;
  out->size = b.requested;
  out->serial = b.serial;
  out->ticket = nextTicket_++;
  b.unopened.push_back(out->ticket);
  return orSuccess;
}

orError_t DeviceAllocator::issueTicket(size_t offset, uint64_t serial, uint64_t* ticket) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = exportedLocked(offset, serial);
  if (it == blocks_.end() || it->second.freed) {
    return fail(orErrorIpcHandleStale,
                "the allocation at offset %zu of device %d was freed by its "
                "exporting process; it can no longer be shared",
                offset, device_);
  }
  *ticket = nextTicket_++;
  it->second.unopened.push_back(*ticket);
  return orSuccess;
}

orError_t DeviceAllocator::acquireImport(size_t offset, uint64_t serial, uint64_t ticket,
                                         size_t* size) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = exportedLocked(offset, serial);
  if (it == blocks_.end() || it->second.freed) {
    return fail(orErrorIpcHandleStale,
                "the exporting process freed the allocation this handle names "
                "(device %d, offset %zu) after creating the handle",
                device_, offset);
  }
  Block& b = it->second;
  auto t = std::find(b.unopened.begin(), b.unopened.end(), ticket);
  if (t != b.unopened.end()) b.unopened.erase(t);
  ++b.imports;
  *size = b.requested;
  return orSuccess;
}

void DeviceAllocator::releaseImport(size_t offset, uint64_t serial) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = exportedLocked(offset, serial);
  if (it == blocks_.end() || it->second.imports == 0) return;
  if (--it->second.imports == 0 && it->second.freed) freeBlockLocked(it);
}

void DeviceAllocator::discardTicket(size_t offset, uint64_t serial, uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = exportedLocked(offset, serial);
  if (it == blocks_.end()) return;
  auto& unopened = it->second.unopened;
  auto t = std::find(unopened.begin(), unopened.end(), ticket);
  if (t != unopened.end()) unopened.erase(t);
}

orError_t DeviceAllocator::refCounts(uintptr_t ptr, int* opens, int* unopened) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t offset = ptr - arena_.viewBase();
  auto it = arena_.mapped() ? blocks_.find(offset) : blocks_.end();
  if (it == blocks_.end() || it->second.free || it->second.freed) {
    return fail(orErrorInvalidDevicePointer,
                "orIpcGetMemRefCount: %p is not the start of a live allocation on "
                "device %d",
                reinterpret_cast<void*>(ptr), device_);
  }
  *opens = it->second.imports;
  *unopened = int(it->second.unopened.size());
  return orSuccess;
}

bool DeviceAllocator::find(uintptr_t p, Allocation* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  return findLocked(p, out);
}

bool DeviceAllocator::tryFind(uintptr_t p, Allocation* out, bool* gotLock) {
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  *gotLock = lock.owns_lock();
  return *gotLock && findLocked(p, out);
}

bool DeviceAllocator::findLocked(uintptr_t p, Allocation* out) {
  if (!arena_.mapped()) return false;
  size_t offset = p - arena_.viewBase();
  auto it = blocks_.upper_bound(offset);
  if (it == blocks_.begin()) return false;
  --it;
  const Block& b = it->second;
  if (b.free || b.freed || offset - it->first >= b.requested) return false;
  out->base = arena_.viewBase() + it->first;
  out->size = b.requested;
  return true;
}

void DeviceAllocator::insertFree(size_t offset, size_t size, bool dirty) {
  Block& b = blocks_[offset];
  b = Block();
  b.size = size;
  b.dirty = dirty;
  freeBySize_.insert({size, offset});
}

void DeviceAllocator::eraseFree(BlockMap::iterator it) {
  freeBySize_.erase({it->second.size, it->first});
  blocks_.erase(it);
}

void DeviceAllocator::maybePunch(BlockMap::iterator it) {
  Block& b = it->second;
  if (!b.dirty) return;
  size_t page = pageSize();
  size_t first = (it->first + page - 1) / page * page;
  size_t last = (it->first + b.size) / page * page;
  if (last <= first || last - first < kPunchThreshold) return;
  arena_.punchHole(first, last - first);
  // Only the partial pages at the edges may still be resident, and they are
  // never "whole pages" of this region, so it counts as clean.
  b.dirty = false;
}

}  // namespace openreg
