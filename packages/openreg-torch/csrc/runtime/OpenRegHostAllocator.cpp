#include "runtime/OpenRegHostAllocator.h"

#include <chrono>
#include <cstring>
#include <mutex>

#include "runtime/OpenRegEvent.h"
#include "runtime/OpenRegException.h"
#include "runtime/OpenRegStream.h"

namespace c10::openreg {
namespace {

// DOC START: host-allocator-impl
// PyTorch's caching host allocator supplies the cache: power-of-two size classes, a
// block freed after asynchronous copies is reused only once events recorded on their
// streams at free time have completed, empty_cache and the host statistics. A backend
// supplies the runtime calls below, as CUDA's and XPU's do, and times the slow ones
// for the statistics.
struct OpenRegCachingHostAllocatorImpl final
    : public at::CachingHostAllocatorImpl<OpenRegStream, OpenRegEvent> {
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }

 private:
  void allocate_host_memory(size_t size, void** ptr) override {
    const auto start = std::chrono::steady_clock::now();
    OPENREG_CHECK(orMallocHost(ptr, size));
    addTime(stats_.host_alloc_time, start);
  }

  void free_block(at::HostBlock<OpenRegStream>* block) override {
    const auto start = std::chrono::steady_clock::now();
    OPENREG_CHECK(orFreeHost(block->ptr_));
    addTime(stats_.host_free_time, start);
  }

  // The block waits for one event per stream that used it. A stream with nothing
  // pending gets an event never recorded, which counts as completed.
  void record_stream(std::optional<std::vector<OpenRegEvent>>& events,
                     OpenRegStream stream) override {
    OpenRegEvent event;
    if (has_pending_work(stream.stream())) {
      event.record(stream);
    }
    events->push_back(std::move(event));
  }

  bool query_event(OpenRegEvent& event) override {
    return event.query();
  }

  // Only asked for while a private pool is being filled (CUDA graph capture), which
  // openreg does not have: no stream is ever capturing.
  OpenRegStream get_current_stream() const override {
    return getCurrentOpenRegStream();
  }

  bool stream_is_capturing(OpenRegStream /*stream*/) const override {
    return false;
  }

  // In microseconds, as PyTorch reports host_alloc_time and host_free_time.
  void addTime(c10::CachingAllocator::DurationStat& stat,
               std::chrono::steady_clock::time_point start) {
    const auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - start);
    const std::lock_guard<std::mutex> lock(stats_.timing_mutex_);
    stat.increase(elapsed.count());
  }
};
// DOC END: host-allocator-impl

void deletePinned(void* context);

struct OpenRegHostAllocator final
    : public at::CachingHostAllocatorInterface<OpenRegCachingHostAllocatorImpl,
                                               &deletePinned> {};

OpenRegHostAllocator& hostAllocator() {
  static auto* allocator = new OpenRegHostAllocator();  // leaked: frees may run during exit
  return *allocator;
}

void deletePinned(void* context) {
  hostAllocator().free(context);
}

// Registered when the library loads, for torch.accelerator.memory.empty_host_cache.
REGISTER_HOST_ALLOCATOR(at::kPrivateUse1, &hostAllocator());

} // namespace

at::HostAllocator* getPinnedHostAllocator() {
  return &hostAllocator();
}

bool isPinnedPointer(const void* ptr) {
  orPointerAttributes attributes{};
  if (orPointerGetAttributes(&attributes, ptr) != orSuccess) {
    (void)orGetLastError();  // device memory outside an allocation: not pinned either
    return false;
  }
  return attributes.type == orMemoryTypeHost;
}

// DOC START: record-host-use
void recordHostUse(const void* ptr, Stream stream) {
  // A copy may read from the middle of a block; the cache knows blocks by their start.
  orPointerAttributes attributes{};
  OPENREG_CHECK(orPointerGetAttributes(&attributes, ptr));
  // False for memory pinned outside the cache: not ours to recycle.
  (void)hostAllocator().record_event(attributes.base, /*ctx=*/nullptr, stream);
}
// DOC END: record-host-use

void emptyHostCache() {
  hostAllocator().empty_cache();
}

} // namespace c10::openreg
