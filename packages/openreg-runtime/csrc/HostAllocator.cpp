// Registry of pinned host allocations (cudaMallocHost / cudaFreeHost).
#include "HostAllocator.h"

#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>

#include "Arena.h"
#include "Errors.h"

namespace openreg {
namespace {

struct Registry {
  std::shared_mutex mutex;
  std::map<uintptr_t, size_t> ranges;  // base -> requested size
  // Lets copies skip the lock entirely while nothing is pinned.
  std::atomic<size_t> count{0};
};

Registry& registry() {
  static auto* r = new Registry;  // leaked: workers outlive statics
  return *r;
}

size_t mappedSize(size_t size) {
  size_t page = pageSize();
  return (size + page - 1) / page * page;
}

}  // namespace

orError_t hostAllocate(size_t size, void** ptr) {
  // Not mlock()ed: RLIMIT_MEMLOCK is tiny by default and nothing here
  // depends on the pages staying resident; "pinned" means "registered".
  void* p = mmap(nullptr, mappedSize(size), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return fail(orErrorMemoryAllocation, "orMallocHost: cannot map %zu bytes: %s",
                size, strerror(errno));
  }
  Registry& r = registry();
  std::unique_lock<std::shared_mutex> lock(r.mutex);
  r.ranges[uintptr_t(p)] = size;
  r.count.store(r.ranges.size(), std::memory_order_release);
  *ptr = p;
  return orSuccess;
}

orError_t hostRelease(void* ptr) {
  Registry& r = registry();
  size_t size;
  {
    std::unique_lock<std::shared_mutex> lock(r.mutex);
    auto it = r.ranges.find(uintptr_t(ptr));
    if (it == r.ranges.end()) {
      return fail(orErrorInvalidValue,
                  "orFreeHost: %p is not pinned memory from orMallocHost (already "
                  "freed, an interior pointer, or ordinary host memory)",
                  ptr);
    }
    size = it->second;
    r.ranges.erase(it);
    r.count.store(r.ranges.size(), std::memory_order_release);
  }
  munmap(ptr, mappedSize(size));
  return orSuccess;
}

bool findPinned(uintptr_t p, HostRange* out) {
  Registry& r = registry();
  if (r.count.load(std::memory_order_acquire) == 0) return false;
  std::shared_lock<std::shared_mutex> lock(r.mutex);
  auto it = r.ranges.upper_bound(p);
  if (it == r.ranges.begin()) return false;
  --it;
  if (p - it->first >= it->second) return false;
  out->base = it->first;
  out->size = it->second;
  return true;
}

}  // namespace openreg
