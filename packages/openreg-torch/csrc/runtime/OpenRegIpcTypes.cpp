#include "runtime/OpenRegIpcTypes.h"

#include <c10/core/DeviceGuard.h>
#include <c10/core/StorageImpl.h>

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

// The context of a storage over memory opened from another process.
struct ImportedData {
  void* base = nullptr;
  DeviceIndex device = -1;
};

void deleteImportedData(void* context) {
  std::unique_ptr<ImportedData> imported(static_cast<ImportedData*>(context));
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
  auto imported = std::make_unique<ImportedData>();
  imported->base = base;
  imported->device = device;
  DataPtr data(static_cast<char*>(base) + offset, imported.get(), &deleteImportedData,
               Device(kPrivateUse1, device));
  imported.release();
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

} // namespace c10::openreg
