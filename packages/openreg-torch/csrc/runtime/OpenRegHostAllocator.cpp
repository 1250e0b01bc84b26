#include "runtime/OpenRegHostAllocator.h"

#include <ATen/core/CachingHostAllocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/flat_hash_map.h>

#include <map>
#include <mutex>
#include <vector>

#include "runtime/OpenRegDeviceAllocator.h"
#include "runtime/OpenRegException.h"
#include "runtime/OpenRegStream.h"

namespace c10::openreg {
namespace {

struct HostBlock {
  size_t size = 0;
  bool in_use = false;
  std::vector<orEvent_t> uses;  // events recorded after asynchronous copies
};

class HostCache {
 public:
  void* allocate(size_t nbytes) {
    const size_t size = roundAllocationSize(nbytes);
    std::lock_guard<std::mutex> lock(mutex_);
    reclaimFinished();
    stats_.active_requests.increase(1);
    stats_.active_bytes.increase(size);
    auto it = free_.find(size);
    if (it != free_.end() && !it->second.empty()) {
      void* ptr = it->second.back();
      it->second.pop_back();
      blocks_[ptr].in_use = true;
      return ptr;
    }
    void* ptr = nullptr;
    OPENREG_CHECK(orMallocHost(&ptr, size));
    stats_.allocations.increase(1);
    stats_.allocated_bytes.increase(size);
    blocks_[ptr] = HostBlock{size, true, {}};
    return ptr;
  }

  void free(void* ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    HostBlock& block = blocks_.at(ptr);
    block.in_use = false;
    stats_.active_requests.decrease(1);
    stats_.active_bytes.decrease(block.size);
    if (block.uses.empty()) {
      free_[block.size].push_back(ptr);
    } else {
      awaiting_.push_back(ptr);
    }
  }

  bool owns(const void* ptr) {
    orPointerAttributes attributes{};
    if (orPointerGetAttributes(&attributes, ptr) != orSuccess) {
      (void)orGetLastError();
      return false;
    }
    return attributes.type == orMemoryTypeHost;
  }

  void recordUse(const void* ptr, Stream stream) {
    orPointerAttributes attributes{};
    OPENREG_CHECK(orPointerGetAttributes(&attributes, ptr));
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(attributes.base);
    if (it == blocks_.end()) {
      return;  // pinned by someone else: not ours to recycle
    }
    // A buffer pinned once and reused for every batch would otherwise collect one event
    // per copy: those whose copies are done go now.
    destroyFinished(it->second.uses);
    const DeviceGuard guard(stream.device());
    orEvent_t event = nullptr;
    OPENREG_CHECK(orEventCreateWithFlags(&event, orEventDisableTiming));
    OPENREG_CHECK(orEventRecord(event, OpenRegStream(stream).stream()));
    it->second.uses.push_back(event);
  }

  void emptyCache() {
    std::lock_guard<std::mutex> lock(mutex_);
    reclaimFinished();
    for (auto& [size, pointers] : free_) {
      for (void* ptr : pointers) {
        blocks_.erase(ptr);
        OPENREG_CHECK(orFreeHost(ptr));
        stats_.allocations.decrease(1);
        stats_.allocated_bytes.decrease(size);
      }
    }
    free_.clear();
  }

  at::HostStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void resetAccumulated() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto* stat : {&stats_.active_requests, &stats_.active_bytes, &stats_.allocations,
                       &stats_.allocated_bytes}) {
      stat->reset_accumulated();
    }
  }

  void resetPeak() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto* stat : {&stats_.active_requests, &stats_.active_bytes, &stats_.allocations,
                       &stats_.allocated_bytes}) {
      stat->reset_peak();
    }
  }

 private:
  // Blocks freed while copies were pending become reusable once those copies are done.
  static void destroyFinished(std::vector<orEvent_t>& uses) {
    for (auto it = uses.begin(); it != uses.end();) {
      if (orEventQuery(*it) == orSuccess) {
        OPENREG_CHECK(orEventDestroy(*it));
        it = uses.erase(it);
      } else {
        (void)orGetLastError();
        ++it;
      }
    }
  }

  void reclaimFinished() {
    for (auto& [ptr, block] : blocks_) {
      destroyFinished(block.uses);
    }
    for (auto it = awaiting_.begin(); it != awaiting_.end();) {
      HostBlock& block = blocks_.at(*it);
      if (block.uses.empty()) {
        free_[block.size].push_back(*it);
        it = awaiting_.erase(it);
      } else {
        ++it;
      }
    }
  }

  std::mutex mutex_;
  ska::flat_hash_map<void*, HostBlock> blocks_;
  std::map<size_t, std::vector<void*>> free_;
  std::vector<void*> awaiting_;
  at::HostStats stats_;
};

HostCache& hostCache() {
  static auto* cache = new HostCache();  // leaked: frees may run during exit
  return *cache;
}

void deletePinned(void* ptr) {
  if (ptr != nullptr) {
    hostCache().free(ptr);
  }
}

// Deriving from at::HostAllocator makes torch.accelerator.memory.empty_host_cache and
// PyTorch's own pinned-memory bookkeeping (record_event after async copies) work.
class PinnedHostAllocator final : public at::HostAllocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    if (nbytes == 0) {
      return {nullptr, nullptr, &deletePinned, Device(kCPU)};
    }
    void* ptr = hostCache().allocate(nbytes);
    return {ptr, ptr, &deletePinned, Device(kCPU)};
  }
  DeleterFnPtr raw_deleter() const override { return &deletePinned; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
  bool record_event(void* ptr, void* /*ctx*/, c10::Stream stream) override {
    hostCache().recordUse(ptr, stream);
    return true;
  }
  void empty_cache() override { hostCache().emptyCache(); }
  at::HostStats get_stats() override { return hostCache().stats(); }
  void reset_accumulated_stats() override { hostCache().resetAccumulated(); }
  void reset_peak_stats() override { hostCache().resetPeak(); }
};

PinnedHostAllocator pinned_allocator;
REGISTER_HOST_ALLOCATOR(at::kPrivateUse1, &pinned_allocator);

} // namespace

c10::Allocator* getPinnedHostAllocator() {
  return &pinned_allocator;
}

bool isPinnedPointer(const void* ptr) {
  return hostCache().owns(ptr);
}

void recordHostUse(const void* ptr, Stream stream) {
  hostCache().recordUse(ptr, stream);
}

void emptyHostCache() {
  hostCache().emptyCache();
}

} // namespace c10::openreg
