#pragma once

// The caching device allocator, after c10/cuda/CUDACachingAllocator: one cache per
// device, blocks reused by size class and stream, frees that respect record_stream,
// statistics, and an out-of-memory path that empties the cache and retries before
// raising torch.OutOfMemoryError. Deriving from c10::DeviceAllocator is what makes
// torch.accelerator.memory.* work for openreg.

#include <c10/core/CachingDeviceAllocator.h>

#include "runtime/OpenRegMacros.h"

namespace c10::openreg {

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

} // namespace c10::openreg
