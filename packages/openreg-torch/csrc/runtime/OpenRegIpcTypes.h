#pragma once

// Storages shared with other processes, after torch/csrc/CudaIPCTypes.h.
//
// Sender: sharing a storage swaps its DataPtr for one whose context keeps the original
// (the caching allocator's block). When the storage dies while another process still
// has the memory open, or a handle made for it has not been opened yet (the runtime
// counts both, orIpcGetMemRefCount), the original goes to a limbo instead of back to
// the cache; it is released once both counts are zero (checked whenever a storage is
// shared or released, and by torch.openreg.ipc_collect()).
//
// Receiver: a storage built over orIpcOpenMemHandle's pointer, not resizable (it is
// someone else's allocation), whose deleter synchronises the device and closes it.

#include <c10/core/Storage.h>
#include <openreg/openreg.h>

#include <string>

#include "runtime/OpenRegMacros.h"

namespace c10::openreg {

struct SharedStorageInfo {
  DeviceIndex device = -1;
  std::string handle;    // OR_IPC_HANDLE_SIZE bytes; empty for a zero-byte storage
  uintptr_t base = 0;    // start of the allocation in this process
  size_t offset = 0;     // of the storage's data in the allocation
  size_t nbytes = 0;
};

// Share `storage` (device memory of this process, or memory it opened from another):
// waits for the work queued on the device's current stream, keeps the memory from
// being reused while other processes may use it, and returns a new handle.
OPENREG_TORCH_API SharedStorageInfo shareStorage(const c10::Storage& storage);

// Open a handle made by another process; returns the allocation's pointer here.
OPENREG_TORCH_API void* openHandle(const std::string& handle);
// Undo openHandle when the pointer is not wrapped after all (already open here).
OPENREG_TORCH_API void closeHandle(void* base);
// A storage over [base + offset, + nbytes) that owns one open of `base`.
OPENREG_TORCH_API c10::Storage wrapOpenedHandle(DeviceIndex device, void* base, size_t offset,
                                                size_t nbytes);
// A handle that will not be opened (its storage was found in this process already):
// no longer counted as unopened by its exporter.
OPENREG_TORCH_API void releaseUnusedHandle(const std::string& handle);

// Release limbo blocks no other process uses any more; returns how many remain.
OPENREG_TORCH_API size_t ipcCollect();

// DOC START: ipc-memory-stats
// Device memory shared between processes, counted apart from the caching allocator's
// statistics (torch.openreg.ipc_memory_stats): received storages are another process's
// allocation; limbo blocks are freed here but still used elsewhere (they stay allocated
// in this process's statistics until released).
struct IpcMemoryStats {
  int64_t imported_bytes = 0;       // bytes of received storages alive in this process
  int64_t imported_bytes_peak = 0;
  int64_t imported_storages = 0;
  int64_t limbo_bytes = 0;          // bytes of this process's blocks held for others
  int64_t limbo_blocks = 0;
};
OPENREG_TORCH_API IpcMemoryStats ipcMemoryStats(DeviceIndex device);
// DOC END: ipc-memory-stats

} // namespace c10::openreg
