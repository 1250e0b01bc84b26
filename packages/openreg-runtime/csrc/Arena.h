// A device's memory: one memfd mapped twice. The device view (PROT_NONE) holds
// the addresses orMalloc hands out, so host dereferences fault; the kernel view
// (read-write) is what copies and kernels touch. Same offset in both views.
#pragma once

#include <openreg/openreg.h>

#include <cstddef>
#include <cstdint>

namespace openreg {

class Arena {
 public:
  // Create the memfd and both views on first use. Caller serialises (the
  // device allocator's mutex). orErrorInitializationError if the kernel
  // refuses the memfd or the mappings.
  orError_t ensureMapped(int device, size_t capacity);
  bool mapped() const { return view_ != nullptr; }
  uintptr_t viewBase() const { return reinterpret_cast<uintptr_t>(view_); }
  char* kernelBase() const { return kernel_; }
  size_t size() const { return size_; }
  // The memory file, handed to importing processes (IPC).
  int fd() const { return fd_; }
  // Return the pages of [offset, offset + length) to the OS; both must be
  // page aligned. The views stay valid and read back zeros.
  void punchHole(size_t offset, size_t length);

 private:
  int fd_ = -1;
  char* view_ = nullptr;
  char* kernel_ = nullptr;
  size_t size_ = 0;
};

// Lock-free and async-signal-safe lookups over the published view ranges:
// this process's devices first, then memory imported from other processes.
int deviceOfView(uintptr_t p);
int deviceOfKernel(uintptr_t p);
// Kernel-view address of a device-view address, or nullptr.
void* viewToKernel(uintptr_t p);
void* kernelToView(uintptr_t p);
// Device `device`'s published views (all 0 before its arena is mapped).
void publishedViews(int device, uintptr_t* view, uintptr_t* kernel, size_t* size);

// Imported (IPC) ranges: at most kMaxImportRanges (exporter, device) pairs.
// The slot holding `p`'s device view, or -1; *viewBase receives its start.
int importSlotOfView(uintptr_t p, uintptr_t* viewBase);
// Publish / withdraw an imported range; the caller serialises. Publishing
// returns the slot, or -1 when all are taken.
constexpr int kMaxImportRanges = 256;
int publishImportRange(int device, uintptr_t view, uintptr_t kernel, size_t size);
void retireImportRange(int slot);

size_t pageSize();

}  // namespace openreg
