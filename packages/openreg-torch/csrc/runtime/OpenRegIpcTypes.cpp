#include "runtime/OpenRegIpcTypes.h"

#include <c10/core/DeviceGuard.h>
#include <c10/core/StorageImpl.h>

#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/OpenRegException.h"
#include "runtime/OpenRegFunctions.h"
#include "runtime/OpenRegStream.h"

namespace c10::openreg {
namespace {

// The context of a shared storage's DataPtr in the sending process.
struct SentData {
  DataPtr original;  // the caching allocator's block
  void* base = nullptr;
  size_t nbytes = 0;  // of the storage, when it was first shared
};

// Whether another process may still use the block (an open, or a handle not opened
// yet). Memory the runtime no longer knows as live cannot be in use elsewhere.
bool stillShared(const SentData& sent) {
  int opens = 0;
  int unopened = 0;
  if (orIpcGetMemRefCount(sent.base, &opens, &unopened) != orSuccess) {
    (void)orGetLastError();
    return false;
  }
  return opens > 0 || unopened > 0;
}

class Limbo {
 public:
  // Called by the deleter of a shared storage's DataPtr (any thread).
  void add(std::unique_ptr<SentData> sent) {
    if (!stillShared(*sent)) {
      sent.reset();  // back to the cache
      collect();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      held_.push_back(std::move(sent));
    }
    collect();
  }

  // Blocks and bytes of `device` held for other processes.
  std::pair<int64_t, int64_t> held_on(DeviceIndex device) {
    std::lock_guard<std::mutex> lock(mutex_);
    int64_t blocks = 0;
    int64_t bytes = 0;
    for (const auto& sent : held_) {
      if (sent->original.device().index() == device) {
        ++blocks;
        bytes += static_cast<int64_t>(sent->nbytes);
      }
    }
    return {blocks, bytes};
  }

  size_t collect() {
    std::vector<std::unique_ptr<SentData>> released;
    size_t remaining = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = held_.begin(); it != held_.end();) {
        if (stillShared(**it)) {
          ++it;
        } else {
          released.push_back(std::move(*it));
          it = held_.erase(it);
        }
      }
      remaining = held_.size();
    }
    // Freed outside the lock: returning a block takes the allocator's.
    released.clear();
    return remaining;
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<SentData>> held_;
};

Limbo& limbo() {
  static auto* l = new Limbo;  // leaked: storages may die during static destruction
  return *l;
}

void deleteSentData(void* context) {
  limbo().add(std::unique_ptr<SentData>(static_cast<SentData*>(context)));
}

// Memory opened from other processes, per device: counted apart from the caching
// allocator's statistics (it is not this process's allocation).
struct ImportedCounters {
  std::atomic<int64_t> bytes{0};
  std::atomic<int64_t> peak_bytes{0};
  std::atomic<int64_t> storages{0};

  void add(int64_t nbytes) {
    const int64_t now = bytes.fetch_add(nbytes) + nbytes;
    int64_t peak = peak_bytes.load();
    while (now > peak && !peak_bytes.compare_exchange_weak(peak, now)) {
    }
    storages.fetch_add(1);
  }
  void remove(int64_t nbytes) {
    bytes.fetch_sub(nbytes);
    storages.fetch_sub(1);
  }
};

ImportedCounters& imported_on(DeviceIndex device) {
  static auto* counters = new std::array<ImportedCounters, OR_MAX_DEVICES>;  // leaked, as the limbo
  return (*counters).at(static_cast<size_t>(device));
}

// The context of a storage over memory opened from another process.
struct ImportedData {
  void* base = nullptr;
  DeviceIndex device = -1;
  size_t nbytes = 0;
};

void deleteImportedData(void* context) {
  std::unique_ptr<ImportedData> imported(static_cast<ImportedData*>(context));
  imported_on(imported->device).remove(static_cast<int64_t>(imported->nbytes));
  // Work queued on this device may still read the memory, and closing the last open
  // of an exporter's device unmaps it: wait first, as cudaFree does.
  const DeviceGuard guard(Device(kPrivateUse1, imported->device));
  if (orDeviceSynchronize() != orSuccess || orIpcCloseMemHandle(imported->base) != orSuccess) {
    (void)orGetLastError();  // a deleter cannot throw; the memory is gone either way
  }
}

orIpcMemHandle_t toHandle(const std::string& bytes) {
  TORCH_CHECK(bytes.size() == sizeof(orIpcMemHandle_t), "openreg: an IPC handle is ",
              sizeof(orIpcMemHandle_t), " bytes, got ", bytes.size());
  orIpcMemHandle_t handle;
  std::memcpy(&handle, bytes.data(), sizeof(handle));
  return handle;
}

} // namespace

// DOC START: share-storage
SharedStorageInfo shareStorage(const c10::Storage& storage) {
  StorageImpl* impl = storage.unsafeGetStorageImpl();
  const Device device = impl->device();
  TORCH_CHECK(device.type() == kPrivateUse1, "openreg: cannot share a storage on ", device,
              " through openreg IPC");
  SharedStorageInfo info;
  info.device = device.index();
  info.nbytes = impl->nbytes();
  void* data = impl->mutable_data_ptr().get();
  if (info.nbytes == 0 || data == nullptr) {
    return info;
  }
  // The receiver may read at once: work queued on this stream must be done (as CUDA
  // makes the receiver wait on an event recorded here).
  getCurrentOpenRegStream(info.device).synchronize();
  orPointerAttributes attributes;
  OPENREG_CHECK(orPointerGetAttributes(&attributes, data));
  info.base = reinterpret_cast<uintptr_t>(attributes.base);
  info.offset = reinterpret_cast<uintptr_t>(data) - info.base;
  const DataPtr& current = impl->data_ptr();
  const bool own = current.get_deleter() != &deleteImportedData;
  if (own && current.get_deleter() != &deleteSentData) {
    // From now on the storage's death sends the block through the limbo.
    auto sent = std::make_unique<SentData>();
    sent->base = attributes.base;
    sent->nbytes = info.nbytes;
    DataPtr wrapped(data, sent.get(), &deleteSentData, device);
    sent->original = impl->set_data_ptr(std::move(wrapped));
    sent.release();
  }
  orIpcMemHandle_t handle;
  OPENREG_CHECK(orIpcGetMemHandle(&handle, attributes.base));
  info.handle.assign(reinterpret_cast<const char*>(&handle), sizeof(handle));
  limbo().collect();
  return info;
}
// DOC END: share-storage

void* openHandle(const std::string& handle) {
  void* base = nullptr;
  OPENREG_CHECK(orIpcOpenMemHandle(&base, toHandle(handle), 0));
  return base;
}

void closeHandle(void* base) {
  OPENREG_CHECK(orIpcCloseMemHandle(base));
}

c10::Storage wrapOpenedHandle(DeviceIndex device, void* base, size_t offset, size_t nbytes) {
  check_device_index(device);
  auto imported = std::make_unique<ImportedData>();
  imported->base = base;
  imported->device = device;
  imported->nbytes = nbytes;
  DataPtr data(static_cast<char*>(base) + offset, imported.get(), &deleteImportedData,
               Device(kPrivateUse1, device));
  imported.release();
  imported_on(device).add(static_cast<int64_t>(nbytes));
  mark_device_used(device);
  // Not resizable: the memory is a view of another process's allocation.
  return c10::Storage(c10::make_intrusive<StorageImpl>(StorageImpl::use_byte_size_t(), nbytes,
                                                        std::move(data), nullptr,
                                                        /*resizable=*/false));
}

void releaseUnusedHandle(const std::string& bytes) {
  const orIpcMemHandle_t handle = toHandle(bytes);
  if (orIpcDiscardMemHandle(&handle) == orSuccess) {
    return;
  }
  (void)orGetLastError();
  // Made by another process (this one re-sent memory it opened): opening uses it up.
  void* base = openHandle(bytes);
  closeHandle(base);
}

size_t ipcCollect() {
  return limbo().collect();
}

IpcMemoryStats ipcMemoryStats(DeviceIndex device) {
  check_device_index(device);
  IpcMemoryStats stats;
  const ImportedCounters& imported = imported_on(device);
  stats.imported_bytes = imported.bytes.load();
  stats.imported_bytes_peak = imported.peak_bytes.load();
  stats.imported_storages = imported.storages.load();
  std::tie(stats.limbo_blocks, stats.limbo_bytes) = limbo().held_on(device);
  return stats;
}

} // namespace c10::openreg
