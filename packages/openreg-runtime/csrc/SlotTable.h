// Handle table for streams and events. A handle is (generation << 32 |
// index + 1); objects are never freed, only recycled, and every recycle bumps
// the slot's generation, so validating a handle is two lock-free loads and a
// stale or forged handle can never reach freed memory.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace openreg {

// T must provide `std::atomic<uint32_t> slotGeneration` (odd while live) and
// `uint32_t slotIndex`.
template <class T>
class SlotTable {
 public:
  static constexpr uint32_t kChunkBits = 8;
  static constexpr uint32_t kChunkSize = 1u << kChunkBits;
  static constexpr uint32_t kMaxChunks = 4096;  // about a million live objects

  // A recycled or fresh object with a new live handle, or nullptr when full.
  // `init(obj)` runs before the handle becomes valid, so lock-free readers
  // (lookup, forEachLive) never see a half-initialised object.
  template <class Init>
  T* acquire(uintptr_t* handle, Init&& init) {
    std::lock_guard<std::mutex> lock(mutex_);
    uint32_t index;
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
    } else {
      if (next_ == kChunkSize * kMaxChunks) return nullptr;
      index = next_++;
      uint32_t chunk = index >> kChunkBits;
      if (chunks_[chunk].load(std::memory_order_relaxed) == nullptr) {
        T* objects = new T[kChunkSize];
        for (uint32_t i = 0; i < kChunkSize; ++i) objects[i].slotIndex = (chunk << kChunkBits) + i;
        chunks_[chunk].store(objects, std::memory_order_release);
      }
      limit_.store(next_, std::memory_order_release);
    }
    T* obj = at(index);
    init(*obj);
    uint32_t gen = obj->slotGeneration.load(std::memory_order_relaxed) + 1;  // odd: live
    obj->slotGeneration.store(gen, std::memory_order_release);
    *handle = (uintptr_t(gen) << 32) | (uintptr_t(index) + 1);
    return obj;
  }

  // The live object named by `handle`, or nullptr. Lock-free.
  T* lookup(uintptr_t handle) const {
    uint32_t low = uint32_t(handle);
    uint32_t gen = uint32_t(uint64_t(handle) >> 32);
    if (low == 0 || (gen & 1) == 0 || low > limit_.load(std::memory_order_acquire)) {
      return nullptr;
    }
    T* obj = at(low - 1);
    return obj->slotGeneration.load(std::memory_order_acquire) == gen ? obj : nullptr;
  }

  // Invalidate `obj`'s handle. Returns false if it was not live (a second
  // destroy racing the first). The slot is not reusable until recycle().
  bool retire(T* obj, uintptr_t handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    uint32_t gen = uint32_t(uint64_t(handle) >> 32);
    if (obj->slotGeneration.load(std::memory_order_relaxed) != gen) return false;
    obj->slotGeneration.store(gen + 1, std::memory_order_release);  // even: dead
    return true;
  }

  void recycle(T* obj) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(obj->slotIndex);
  }

  // Call f(T&) for every live object (a snapshot; objects may retire during).
  template <class F>
  void forEachLive(F&& f) const {
    uint32_t limit = limit_.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < limit; ++i) {
      T* obj = at(i);
      if (obj->slotGeneration.load(std::memory_order_acquire) & 1) f(*obj);
    }
  }

 private:
  T* at(uint32_t index) const {
    return chunks_[index >> kChunkBits].load(std::memory_order_acquire) +
           (index & (kChunkSize - 1));
  }

  std::mutex mutex_;
  std::vector<uint32_t> free_;
  uint32_t next_ = 0;
  std::atomic<uint32_t> limit_{0};
  std::atomic<T*> chunks_[kMaxChunks] = {};
};

}  // namespace openreg
