#pragma once

// The caching device allocator, after c10/cuda/CUDACachingAllocator: one cache per
// device, blocks reused by size class and stream, frees that respect record_stream,
// statistics, and an out-of-memory path that empties the cache and retries before
// raising torch.OutOfMemoryError. Deriving from c10::DeviceAllocator is what makes
// torch.accelerator.memory.* work for openreg. Also the memory debugging of
// torch.openreg.memory: a per-process limit, allocation history with stack traces and
// snapshots of the cache, and reports to the profiler (profile_memory=True).

#include <c10/core/CachingDeviceAllocator.h>

#include <vector>

#include "runtime/OpenRegMacros.h"
#include "runtime/OpenRegStream.h"

namespace c10::openreg {

// One event of the allocation history (CUDA's TraceEntry, with a wall-clock time).
struct TraceEvent {
  CachingDeviceAllocator::TraceEntry::Action action;
  size_t address = 0;  // for OOM: the bytes the device had free
  size_t size = 0;     // requested bytes for alloc/free, reserved bytes for segments
  void* stream = nullptr;
  int64_t time_us = 0;  // microseconds since the epoch
  std::shared_ptr<GatheredContext> context;  // the stack, when recorded
};

// The cache's state: every segment (in openreg one block each: no splitting) and the
// history recorded per device, oldest first.
struct MemorySnapshot {
  std::vector<CachingDeviceAllocator::SegmentInfo> segments;
  std::vector<std::vector<TraceEvent>> device_traces;
};

// DOC START: device-allocator
class OPENREG_TORCH_API OpenRegDeviceAllocator final : public c10::DeviceAllocator {
 public:
  DataPtr allocate(size_t nbytes) override;
  DeleterFnPtr raw_deleter() const override;
  void copy_data(void* dest, const void* src, std::size_t count) const override;

  bool initialized() override;
  void emptyCache(MempoolId_t mempool_id = {0, 0}) override;
  void recordStream(const DataPtr& data_ptr, c10::Stream stream) override;
  CachingDeviceAllocator::DeviceStats getDeviceStats(DeviceIndex device) override;
  void resetAccumulatedStats(DeviceIndex device) override;
  void resetPeakStats(DeviceIndex device) override;
  std::pair<size_t, size_t> getMemoryInfo(DeviceIndex device) override;
};
// DOC END: device-allocator

OPENREG_TORCH_API OpenRegDeviceAllocator& getDeviceAllocator();

// What the allocator's allocate() gives for the current stream, for callers that know
// the stream already (a kernel's routed allocations: its launch looked it up).
OPENREG_TORCH_API DataPtr allocateOnStream(size_t nbytes, const OpenRegStream& stream);

// DOC START: memory-debugging
// Allocations on `device` that would take the memory this process holds there past
// fraction * capacity raise OutOfMemoryError (torch.cuda.set_per_process_memory_fraction).
OPENREG_TORCH_API void setMemoryFraction(double fraction, DeviceIndex device);
OPENREG_TORCH_API double getMemoryFraction(DeviceIndex device);

// Starts, changes or (record_state == false) stops recording. `gather` captures the
// calling thread's stack; `when` says which events keep one (CUDA's RecordContext);
// `record_trace` keeps the history of events, at most `max_entries` (a ring buffer).
OPENREG_TORCH_API void recordHistory(bool record_state, bool record_trace,
                                     CachingDeviceAllocator::CreateContextFn gather,
                                     CachingDeviceAllocator::RecordContext when,
                                     size_t max_entries, bool clear_history);

OPENREG_TORCH_API MemorySnapshot snapshot();
// DOC END: memory-debugging

} // namespace c10::openreg
