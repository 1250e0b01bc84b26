#include "runtime/OpenRegDeviceAllocator.h"

#include <c10/core/DeviceGuard.h>
#include <c10/util/flat_hash_map.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_set>
#include <vector>

#include "execution/DeviceLaunch.h"
#include "runtime/OpenRegEvent.h"
#include "runtime/OpenRegException.h"
#include "runtime/OpenRegFunctions.h"
#include "runtime/OpenRegIpcTypes.h"
#include "runtime/OpenRegStream.h"

namespace c10::openreg {
namespace {

using CachingDeviceAllocator::CreateContextFn;
using CachingDeviceAllocator::DeviceStats;
using CachingDeviceAllocator::RecordContext;
using CachingDeviceAllocator::SegmentInfo;
using Action = CachingDeviceAllocator::TraceEntry::Action;
using c10::CachingAllocator::StatType;
using c10::CachingAllocator::format_size;

constexpr size_t kMinBlockSize = OR_MEMORY_ALIGNMENT;  // every size is a multiple of this
constexpr size_t kSmallSize = 1 << 20;                 // up to 1 MiB: the small pool
constexpr size_t kMaxAllocation = size_t(1) << 56;  // beyond any device; rounding stays exact

struct Block {
  Block(void* ptr, size_t size, const OpenRegStream& stream)
      : ptr(ptr), size(size), stream(stream), handle(stream.stream()) {}

  void* ptr;
  size_t size;           // the size class actually reserved
  size_t requested = 0;  // what the caller asked for
  OpenRegStream stream;  // the stream it was allocated on
  orStream_t handle;     // stream.stream(), looked up once
  std::unordered_set<OpenRegStream> stream_uses;  // other streams that used it (record_stream)
  std::vector<OpenRegEvent> pending_events;       // recorded on those streams at free time
  bool waits_for_other_streams = false;           // some pending event is another stream's
  std::shared_ptr<GatheredContext> context;       // where it was allocated, when recorded
};

struct PoolKey {
  orStream_t stream;
  size_t size;
  bool operator==(const PoolKey& other) const {
    return stream == other.stream && size == other.size;
  }
};

// Looked up on every allocation: a flat hash map, not an ordered tree.
struct PoolKeyHash {
  size_t operator()(const PoolKey& key) const {
    return std::hash<const void*>()(key.stream) * 31 + key.size / kMinBlockSize;
  }
};

// The size class a request of `nbytes` is served from.
size_t roundAllocationSize(size_t nbytes) {
  if (nbytes <= kMinBlockSize) {
    return kMinBlockSize;
  }
  if (nbytes <= kSmallSize) {
    return (nbytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
  }
  // Four size classes per power of two: at most 25% slack, and loops that allocate
  // slightly different sizes still hit the cache.
  const int bits = 63 - __builtin_clzll(nbytes);
  const size_t step = size_t(1) << (bits - 2);
  return (nbytes + step - 1) / step * step;
}

StatType poolOf(size_t size) {
  return size <= kSmallSize ? StatType::SMALL_POOL : StatType::LARGE_POOL;
}

// Five of each per allocation and free: inlined, not called.
C10_ALWAYS_INLINE void increase(c10::CachingAllocator::StatArray& stats, size_t size,
                                size_t amount) {
  stats[static_cast<size_t>(StatType::AGGREGATE)].increase(amount);
  stats[static_cast<size_t>(poolOf(size))].increase(amount);
}

C10_ALWAYS_INLINE void decrease(c10::CachingAllocator::StatArray& stats, size_t size,
                                size_t amount) {
  stats[static_cast<size_t>(StatType::AGGREGATE)].decrease(amount);
  stats[static_cast<size_t>(poolOf(size))].decrease(amount);
}

// DOC START: history-settings
// What _record_memory_history asked for, read on every allocation and free: while
// nothing is recorded that is one relaxed load. Stacks are captured before a cache's
// lock is taken: capturing Python frames may need the GIL, which a thread waiting for
// the lock could hold.
std::atomic<bool> recording{false};
std::atomic<CreateContextFn> gather_context{nullptr};
std::atomic<RecordContext> record_context{RecordContext::NEVER};

std::shared_ptr<GatheredContext> maybeGatherContext(RecordContext level) {
  if (C10_LIKELY(!recording.load(std::memory_order_relaxed))) {
    return nullptr;
  }
  const CreateContextFn gather = gather_context.load();
  if (gather == nullptr || record_context.load() < level) {
    return nullptr;
  }
  return gather();
}
// DOC END: history-settings

// As Python prints a float (the shortest text that reads back the same value).
std::string shortest(double value) {
  std::array<char, 32> text{};
  const auto result = std::to_chars(text.data(), text.data() + text.size(), value);
  return std::string(text.data(), result.ptr);
}

int64_t nowMicroseconds() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What allocate and free tell the profiler (profile_memory=True), taken under the lock
// and reported after it: the profiler's own locks are never taken inside ours.
struct MemoryReport {
  void* ptr = nullptr;
  int64_t size = 0;
  size_t allocated = 0;
  size_t reserved = 0;
};

// The cache of one device. Every member is guarded by `mutex`.
class DeviceCache {
 public:
  explicit DeviceCache(DeviceIndex device) : device_(device) {}

  void* allocate(size_t nbytes, const OpenRegStream& stream) {
    std::shared_ptr<GatheredContext> context = maybeGatherContext(RecordContext::STATE);
    MemoryReport report;
    void* ptr = allocateLocked(nbytes, stream, std::move(context), report);
    reportToProfiler(report);
    return ptr;
  }

  void free(void* ptr) {
    std::shared_ptr<GatheredContext> context = maybeGatherContext(RecordContext::ALL);
    MemoryReport report;
    freeLocked(ptr, std::move(context), report);
    reportToProfiler(report);
  }

  void setMemoryFraction(double fraction) {
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    {
      const DeviceGuard guard(Device(kPrivateUse1, device_));
      OPENREG_CHECK(orMemGetInfo(&free_bytes, &total_bytes));
    }
    std::lock_guard<std::mutex> lock(mutex_);
    fraction_ = fraction;
    allowed_bytes_ = static_cast<size_t>(std::floor(fraction * static_cast<double>(total_bytes)));
  }

  double memoryFraction() {
    std::lock_guard<std::mutex> lock(mutex_);
    return fraction_;
  }

  void recordHistory(bool record_trace, size_t max_entries, bool clear_history) {
    std::lock_guard<std::mutex> lock(mutex_);
    record_trace_ = record_trace;
    max_entries_ = std::max<size_t>(max_entries, 1);
    if (clear_history || !record_trace) {
      trace_.clear();
      trace_next_ = 0;
    }
    if (trace_.size() > max_entries_) {  // keep the newest
      std::rotate(trace_.begin(), trace_.begin() + trace_next_, trace_.end());
      trace_.erase(trace_.begin(), trace_.end() - max_entries_);
      trace_next_ = 0;
    }
  }

  // Every block as a segment of its own, ascending by address, and the history.
  void snapshot(std::vector<SegmentInfo>& segments, std::vector<TraceEvent>& trace) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [ptr, block] : active_) {
      segments.push_back(segmentOf(*block, /*allocated=*/true, /*active=*/true));
    }
    for (Block* block : pending_) {
      segments.push_back(segmentOf(*block, /*allocated=*/false, /*active=*/true));
    }
    for (const auto& [key, blocks] : cached_) {
      for (Block* block : blocks) {
        segments.push_back(segmentOf(*block, /*allocated=*/false, /*active=*/false));
      }
    }
    trace.insert(trace.end(), trace_.begin() + trace_next_, trace_.end());
    trace.insert(trace.end(), trace_.begin(), trace_.begin() + trace_next_);
  }

 private:
  void* allocateLocked(size_t nbytes, const OpenRegStream& stream,
                       std::shared_ptr<GatheredContext> context, MemoryReport& report) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (nbytes > kMaxAllocation) {  // e.g. a negative size seen as size_t: no rounding
      stats_.num_ooms += 1;
      throwOutOfMemory(nbytes);
    }
    const size_t size = roundAllocationSize(nbytes);
    processPendingFrees();
    Block* block = takeCached(stream.stream(), size);
    if (block == nullptr && stream.stream() != running_kernel_stream()) {
      block = takePendingInStreamOrder(stream.stream(), size);
    }
    if (block == nullptr) {
      block = allocateFresh(nbytes, size, stream, lock);
    }
    block->requested = nbytes;
    active_.emplace(block->ptr, block);
    increase(stats_.allocation, size, 1);
    increase(stats_.active, size, 1);
    increase(stats_.allocated_bytes, size, size);
    increase(stats_.active_bytes, size, size);
    increase(stats_.requested_bytes, size, nbytes);
    if (C10_UNLIKELY(context != nullptr || record_trace_)) {
      const bool keep = record_context.load() >= RecordContext::ALLOC;
      recordTrace(Action::ALLOC, block->ptr, nbytes, block->handle, keep ? context : nullptr);
      block->context = std::move(context);
    }
    fillReport(report, block->ptr, static_cast<int64_t>(size));
    return block->ptr;
  }

  void freeLocked(void* ptr, std::shared_ptr<GatheredContext> context, MemoryReport& report) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = active_.find(ptr);
    TORCH_INTERNAL_ASSERT(it != active_.end(), "openreg: freeing unknown pointer ", ptr);
    Block* block = it->second;
    active_.erase(it);
    decrease(stats_.allocation, block->size, 1);
    decrease(stats_.allocated_bytes, block->size, block->size);
    decrease(stats_.requested_bytes, block->size, block->requested);
    fillReport(report, block->ptr, -static_cast<int64_t>(block->size));
    recordTrace(Action::FREE_REQUESTED, block->ptr, block->requested, block->handle, context);
    // DOC START: deferred-free
    // Reuse on the block's own stream is safe only if it is ordered after every use.
    // Work still queued on that stream, or a kernel of another thread already running
    // on it (earlier in its order), could otherwise get the block while a pending use
    // remains: then reuse waits for the stream to pass this point, as with other
    // streams' uses (record_stream). A kernel freeing its own scratch needs no wait,
    // nor does a stream that has already run everything issued on it.
    if (block->handle != running_kernel_stream() && has_pending_work(block->handle)) {
      block->pending_events.push_back(recordEvent(block->stream));
    }
    block->waits_for_other_streams = false;
    for (const OpenRegStream& use : block->stream_uses) {
      if (has_pending_work(use.stream())) {
        block->pending_events.push_back(recordEvent(use));
        block->waits_for_other_streams = true;
      }
    }
    block->stream_uses.clear();
    if (block->pending_events.empty()) {
      release(block, context);
    } else {
      pending_.push_back(block);
    }
    // DOC END: deferred-free
  }

 public:
  void recordStream(void* ptr, Stream stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = active_.find(ptr);
    TORCH_CHECK(it != active_.end(), "openreg: record_stream on memory this allocator does not own");
    const OpenRegStream use(stream);
    if (use != it->second->stream) {
      it->second->stream_uses.insert(use);
    }
  }

  void emptyCache() {
    std::unique_lock<std::mutex> lock(mutex_);
    releaseCached(lock);
  }

  DeviceStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    // Deferred frees whose streams have moved on are free now, not at the next allocation.
    processPendingFrees();
    return stats_;
  }

  void resetAccumulated() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto* array : statArrays()) {
      for (auto& stat : *array) {
        stat.reset_accumulated();
      }
    }
    stats_.num_alloc_retries = 0;
    stats_.num_ooms = 0;
    stats_.num_device_alloc = 0;
    stats_.num_device_free = 0;
  }

  void resetPeak() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto* array : statArrays()) {
      for (auto& stat : *array) {
        stat.reset_peak();
      }
    }
  }

 private:
  std::array<c10::CachingAllocator::StatArray*, 7> statArrays() {
    return {&stats_.allocation,     &stats_.segment,        &stats_.active,
            &stats_.allocated_bytes, &stats_.reserved_bytes, &stats_.active_bytes,
            &stats_.requested_bytes};
  }

  Block* takeCached(orStream_t stream, size_t size) {
    auto it = cached_.find(PoolKey{stream, size});
    if (it == cached_.end() || it->second.empty()) {
      return nullptr;
    }
    Block* block = it->second.back();
    it->second.pop_back();
    return block;
  }

  // DOC START: reuse-in-stream-order
  // What the host issues on a stream runs after everything already queued there, so a
  // block whose free waits only for its own stream can serve the host's next allocation
  // on that stream at once, as CUDA's cache reuses a block freed on its stream (a loop
  // of non_blocking copies whose results are dropped would otherwise reserve a segment
  // per call). Not for a kernel running on the stream: it is earlier in the order than
  // the queued work that still uses the block.
  Block* takePendingInStreamOrder(orStream_t stream, size_t size) {
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      Block* block = *it;
      if (block->handle == stream && block->size == size && !block->waits_for_other_streams) {
        pending_.erase(it);
        block->pending_events.clear();
        release(block);
        return takeCached(stream, size);
      }
    }
    return nullptr;
  }
  // DOC END: reuse-in-stream-order

  Block* allocateFresh(size_t nbytes, size_t size, const OpenRegStream& stream,
                       std::unique_lock<std::mutex>& lock) {
    // DOC START: fraction-check
    // Past the per-process limit: give the cache back first, as for a device that is
    // full, and raise if that does not make room.
    if (C10_UNLIKELY(reservedBytes() + size > allowed_bytes_)) {
      stats_.num_alloc_retries += 1;
      collectShared(lock);
      releaseCached(lock);
      if (reservedBytes() + size > allowed_bytes_) {
        stats_.num_ooms += 1;
        throwOutOfMemory(nbytes);
      }
    }
    // DOC END: fraction-check
    void* ptr = nullptr;
    orError_t error = deviceMalloc(&ptr, size);
    if (error == orErrorMemoryAllocation) {
      // Give everything cached back to the device and try once more.
      stats_.num_alloc_retries += 1;
      collectShared(lock);
      releaseCached(lock);
      error = deviceMalloc(&ptr, size);
    }
    if (error == orErrorMemoryAllocation) {
      stats_.num_ooms += 1;
      throwOutOfMemory(nbytes);
    }
    OPENREG_CHECK(error);
    mark_device_used(device_);
    stats_.num_device_alloc += 1;
    increase(stats_.segment, size, 1);
    increase(stats_.reserved_bytes, size, size);
    auto* block = new Block(ptr, size, stream);
    recordTrace(Action::SEGMENT_ALLOC, ptr, size, block->handle, nullptr);
    return block;
  }

  size_t reservedBytes() const {
    return stats_.reserved_bytes[static_cast<size_t>(StatType::AGGREGATE)].current;
  }

  orError_t deviceMalloc(void** ptr, size_t size) {
    const DeviceGuard guard(Device(kPrivateUse1, device_));
    const orError_t error = orMalloc(ptr, size);
    if (error == orErrorMemoryAllocation) {
      (void)orGetLastError();  // handled here: do not leave it for the next caller
    }
    return error;
  }

  [[noreturn]] void throwOutOfMemory(size_t nbytes) {
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    {
      const DeviceGuard guard(Device(kPrivateUse1, device_));
      OPENREG_CHECK(orMemGetInfo(&free_bytes, &total_bytes));
    }
    const auto aggregate = static_cast<size_t>(StatType::AGGREGATE);
    recordTrace(Action::OOM, reinterpret_cast<void*>(free_bytes), nbytes, nullptr, nullptr);
    std::string limit;
    if (allowed_bytes_ != std::numeric_limits<size_t>::max()) {
      limit = c10::str(" This process has a memory allocation limit of ",
                       format_size(allowed_bytes_), " on this device: ",
                       "set_per_process_memory_fraction(", shortest(fraction_), ") of ",
                       format_size(total_bytes), ".");
    }
    TORCH_CHECK_WITH(OutOfMemoryError, false,
        "openreg out of memory. Tried to allocate ", format_size(nbytes), " on device ",
        static_cast<int>(device_), " (openreg:", static_cast<int>(device_),
        "), which has a total capacity of ", format_size(total_bytes), " of which ",
        format_size(free_bytes), " is free. ",
        format_size(stats_.allocated_bytes[aggregate].current), " is allocated by PyTorch and ",
        format_size(stats_.reserved_bytes[aggregate].current),
        " is reserved by PyTorch.", limit, " The capacity is set by OPENREG_DEVICE_MEMORY.");
  }

  static OpenRegEvent recordEvent(const OpenRegStream& stream) {
    OpenRegEvent event;
    event.record(stream);
    return event;
  }

  void release(Block* block, const std::shared_ptr<GatheredContext>& context = nullptr) {
    decrease(stats_.active, block->size, 1);
    decrease(stats_.active_bytes, block->size, block->size);
    recordTrace(Action::FREE_COMPLETED, block->ptr, block->requested, block->handle, context);
    block->context = nullptr;  // a cached block was allocated by no one
    cached_[PoolKey{block->handle, block->size}].push_back(block);
  }

  // DOC START: record-trace
  // The history is a ring buffer of at most max_entries_ events (CUDA's alloc_trace).
  void recordTrace(Action action, void* address, size_t size, orStream_t stream,
                   std::shared_ptr<GatheredContext> context) {
    if (C10_LIKELY(!record_trace_)) {
      return;
    }
    TraceEvent event{action, reinterpret_cast<size_t>(address), size, stream,
                     nowMicroseconds(), std::move(context)};
    if (trace_.size() < max_entries_) {
      trace_.push_back(std::move(event));
    } else {
      trace_[trace_next_] = std::move(event);
      trace_next_ = (trace_next_ + 1) % max_entries_;
    }
  }
  // DOC END: record-trace

  SegmentInfo segmentOf(const Block& block, bool allocated, bool active) const {
    SegmentInfo segment;
    segment.device = device_;
    segment.address = reinterpret_cast<size_t>(block.ptr);
    segment.total_size = block.size;
    segment.requested_size = allocated ? block.requested : 0;
    segment.allocated_size = allocated ? block.size : 0;
    segment.active_size = active ? block.size : 0;
    segment.stream = block.handle;
    segment.is_large = block.size > kSmallSize;
    segment.context_when_allocated = block.context;
    CachingDeviceAllocator::BlockInfo info;
    info.size = block.size;
    info.requested_size = segment.requested_size;
    info.allocated = allocated;
    info.active = active;
    info.context_when_allocated = block.context;
    segment.blocks.push_back(std::move(info));
    return segment;
  }

  void fillReport(MemoryReport& report, void* ptr, int64_t size) const {
    report.ptr = ptr;
    report.size = size;
    report.allocated = stats_.allocated_bytes[static_cast<size_t>(StatType::AGGREGATE)].current;
    report.reserved = reservedBytes();
  }

  // DOC START: profiler-report
  // torch.profiler(profile_memory=True) installs a thread-local reporter: the free
  // appears as a negative size, attributed (like the allocation) to the running operator.
  void reportToProfiler(const MemoryReport& report) const {
    if (C10_UNLIKELY(report.ptr != nullptr && c10::memoryProfilingEnabled())) {
      c10::reportMemoryUsageToProfiler(report.ptr, report.size, report.allocated,
                                       report.reserved, Device(kPrivateUse1, device_));
    }
  }
  // DOC END: profiler-report

  // Deferred frees whose events have all completed go back to the cache.
  void processPendingFrees() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      Block* block = *it;
      const auto& events = block->pending_events;
      if (!std::all_of(events.begin(), events.end(),
                       [](const OpenRegEvent& event) { return event.query(); })) {
        ++it;
        continue;
      }
      block->pending_events.clear();
      release(block);
      it = pending_.erase(it);
    }
  }

  // DOC START: release-cached
  // Returns every cached block to the device. Work still queued on a stream may use a
  // cached block, so the device is synchronised first, as cudaFree does; but not under
  // the lock: kernels running on other threads allocate and free while we wait. Blocks
  // taken out of the cache first cannot be handed out again, and every use of them was
  // issued before they were freed, hence before the synchronisation.
  // Blocks held for other processes that no longer use them (the IPC limbo) come back
  // to the cache, as CUDA's allocator runs its IPC-collect callback before giving up.
  // Unlocked: a released block returns through this allocator.
  void collectShared(std::unique_lock<std::mutex>& lock) {
    lock.unlock();
    ipcCollect();
    lock.lock();
  }

  void releaseCached(std::unique_lock<std::mutex>& lock) {
    std::vector<Block*> released;
    for (auto& [key, blocks] : cached_) {
      for (Block* block : blocks) {
        decrease(stats_.segment, block->size, 1);
        decrease(stats_.reserved_bytes, block->size, block->size);
        recordTrace(Action::SEGMENT_FREE, block->ptr, block->size, block->handle, nullptr);
        released.push_back(block);
      }
    }
    cached_.clear();
    lock.unlock();
    {
      const DeviceGuard guard(Device(kPrivateUse1, device_));
      OPENREG_CHECK(orDeviceSynchronize());
      for (Block* block : released) {
        OPENREG_CHECK(orFree(block->ptr));
        delete block;
      }
    }
    lock.lock();
    stats_.num_device_free += released.size();
    // Blocks held back by record_stream whose streams the synchronisation drained.
    if (!pending_.empty()) {
      processPendingFrees();
      if (!cached_.empty()) {
        releaseCached(lock);
      }
    }
  }
  // DOC END: release-cached

  const DeviceIndex device_;
  std::mutex mutex_;
  ska::flat_hash_map<void*, Block*> active_;
  ska::flat_hash_map<PoolKey, std::vector<Block*>, PoolKeyHash> cached_;
  std::vector<Block*> pending_;
  DeviceStats stats_;
  double fraction_ = 1.0;
  size_t allowed_bytes_ = std::numeric_limits<size_t>::max();  // no limit
  bool record_trace_ = false;
  size_t max_entries_ = 1;
  std::vector<TraceEvent> trace_;
  size_t trace_next_ = 0;  // the oldest event once trace_ is full
};

// Never destroyed, like the runtime's device tables: a tensor freed during or after static
// destruction (by another library's static, a thread still running, a Python object
// finalised late) must still find its cache. Destroying them at exit also dropped every
// Block they held without deleting it (LeakSanitizer's finding in py311-sanitize).
std::array<DeviceCache*, OR_MAX_DEVICES> caches{};
std::once_flag caches_created;
// Set once the caches exist: every allocation and free asks, and std::call_once costs
// two thread-local accesses and a pthread_once even when it has run.
std::atomic<bool> caches_ready{false};

DeviceCache& cacheOf(DeviceIndex device) {
  if (C10_UNLIKELY(!caches_ready.load(std::memory_order_acquire))) {
    std::call_once(caches_created, [] {
      for (DeviceIndex index = 0; index < device_count(); ++index) {
        caches[index] = new DeviceCache(index);
      }
      caches_ready.store(true, std::memory_order_release);
    });
  }
  check_device_index(device);
  return *caches[device];
}

void deleteDeviceMemory(void* ptr) {
  if (ptr == nullptr) {
    return;
  }
  const DeviceIndex device = device_of_pointer(ptr);
  if (device < 0) {
    // Only in a child forked after the runtime started: device memory is not inherited
    // (MADV_DONTFORK), so there is nothing to give back, and a deleter must not throw.
    return;
  }
  cacheOf(device).free(ptr);
}

OpenRegDeviceAllocator allocator;

} // namespace

DataPtr OpenRegDeviceAllocator::allocate(size_t nbytes) {
  const DeviceIndex device = current_device();
  if (nbytes == 0) {
    return {nullptr, nullptr, &deleteDeviceMemory, Device(kPrivateUse1, device)};
  }
  return allocateOnStream(nbytes, getCurrentOpenRegStream(device));
}

DataPtr allocateOnStream(size_t nbytes, const OpenRegStream& stream) {
  const DeviceIndex device = stream.device_index();
  void* ptr = nbytes == 0 ? nullptr : cacheOf(device).allocate(nbytes, stream);
  return {ptr, ptr, &deleteDeviceMemory, Device(kPrivateUse1, device)};
}

DeleterFnPtr OpenRegDeviceAllocator::raw_deleter() const {
  return &deleteDeviceMemory;
}

void OpenRegDeviceAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  at::native::openreg::launch_copy(dest, src, count, orMemcpyDeviceToDevice,
                                   getCurrentOpenRegStream());
}

bool OpenRegDeviceAllocator::initialized() {
  // Whether any device cache exists yet. torch.accelerator's memory functions skip work
  // before that; answering true at once made them start the runtime, so a child forked
  // after torch.accelerator.empty_cache() could not use openreg (CUDA: the same check).
  return caches_ready.load(std::memory_order_acquire);
}

void OpenRegDeviceAllocator::emptyCache(MempoolId_t /*mempool_id*/) {
  for (DeviceIndex device = 0; device < device_count(); ++device) {
    cacheOf(device).emptyCache();
  }
}

void OpenRegDeviceAllocator::recordStream(const DataPtr& data_ptr, c10::Stream stream) {
  if (data_ptr.get() != nullptr && data_ptr.get_deleter() == &deleteDeviceMemory) {
    cacheOf(data_ptr.device().index()).recordStream(data_ptr.get(), stream);
  }
}

CachingDeviceAllocator::DeviceStats OpenRegDeviceAllocator::getDeviceStats(DeviceIndex device) {
  return cacheOf(device).stats();
}

void OpenRegDeviceAllocator::resetAccumulatedStats(DeviceIndex device) {
  cacheOf(device).resetAccumulated();
}

void OpenRegDeviceAllocator::resetPeakStats(DeviceIndex device) {
  cacheOf(device).resetPeak();
}

std::pair<size_t, size_t> OpenRegDeviceAllocator::getMemoryInfo(DeviceIndex device) {
  check_device_index(device);
  const DeviceGuard guard(Device(kPrivateUse1, device));
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  OPENREG_CHECK(orMemGetInfo(&free_bytes, &total_bytes));
  return {free_bytes, total_bytes};
}

OpenRegDeviceAllocator& getDeviceAllocator() {
  return allocator;
}

void setMemoryFraction(double fraction, DeviceIndex device) {
  TORCH_CHECK(fraction >= 0 && fraction <= 1, "openreg: invalid memory fraction ", fraction,
              "; it must be in [0, 1]");
  cacheOf(device).setMemoryFraction(fraction);
}

double getMemoryFraction(DeviceIndex device) {
  return cacheOf(device).memoryFraction();
}

void recordHistory(bool record_state, bool record_trace, CreateContextFn gather,
                   RecordContext when, size_t max_entries, bool clear_history) {
  if (!record_state) {
    record_trace = false;
    gather = nullptr;
    when = RecordContext::NEVER;
  }
  recording.store(false);
  gather_context.store(gather);
  record_context.store(when);
  for (DeviceIndex device = 0; device < device_count(); ++device) {
    cacheOf(device).recordHistory(record_trace, max_entries, clear_history);
  }
  recording.store(record_state);
}

MemorySnapshot snapshot() {
  MemorySnapshot result;
  result.device_traces.resize(device_count());
  for (DeviceIndex device = 0; device < device_count(); ++device) {
    cacheOf(device).snapshot(result.segments, result.device_traces[device]);
  }
  std::sort(result.segments.begin(), result.segments.end(),
            [](const SegmentInfo& a, const SegmentInfo& b) {
              return std::tie(a.device, a.address) < std::tie(b.device, b.address);
            });
  return result;
}

REGISTER_ALLOCATOR(kPrivateUse1, &allocator);

} // namespace c10::openreg
