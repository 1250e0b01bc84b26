// memfd double mapping and the lock-free range table used to translate
// device-view addresses.
#include "Arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "Env.h"
#include "Errors.h"

namespace openreg {
namespace {

// Published once per device when its arena is mapped and never changed, so
// readers need no lock; unmapped devices have size 0 and never match.
struct Range {
  std::atomic<uintptr_t> view{0};
  std::atomic<uintptr_t> kernel{0};
  std::atomic<size_t> size{0};
};
Range g_ranges[OR_MAX_DEVICES];
// One past the highest mapped device, so lookups scan only live ranges.
std::atomic<int> g_rangeLimit{0};

// Other processes' device memory mapped here (IPC). Unlike device ranges these
// come and go, so each carries a sequence number (odd while being rewritten).
// Slots are only written under the IPC import mutex.
struct ImportRange {
  std::atomic<uint32_t> seq{0};
  std::atomic<uintptr_t> view{0};
  std::atomic<uintptr_t> kernel{0};
  std::atomic<size_t> size{0};
  std::atomic<int> device{-1};
};
ImportRange g_imports[kMaxImportRanges];
std::atomic<int> g_importLimit{0};

}  // namespace

size_t pageSize() {
  static const size_t size = size_t(sysconf(_SC_PAGESIZE));
  return size;
}

orError_t Arena::ensureMapped(int device, size_t capacity) {
  if (view_ != nullptr) return orSuccess;
  size_t page = pageSize();
  size_t size = (capacity + page - 1) / page * page;
  char name[32];
  snprintf(name, sizeof(name), "openreg-device-%d", device);
  int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) {
    return fail(orErrorInitializationError,
                "device %d: memfd_create failed: %s", device, strerror(errno));
  }
  if (ftruncate(fd, off_t(size)) != 0) {
    int e = errno;
    close(fd);
    return fail(orErrorInitializationError,
                "device %d: sizing its %zu-byte memory file failed: %s", device,
                size, strerror(e));
  }
  // DOC START: double-mapping
  // MAP_NORESERVE: the capacity is only a reservation; pages cost memory
  // once a kernel touches them.
  void* view = mmap(nullptr, size, PROT_NONE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  void* kernel = view == MAP_FAILED
                     ? MAP_FAILED
                     : mmap(nullptr, size, PROT_READ | PROT_WRITE,
                            MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (kernel == MAP_FAILED) {
    int e = errno;
    if (view != MAP_FAILED) munmap(view, size);
    close(fd);
    return fail(orErrorInitializationError,
                "device %d: mapping %zu bytes of device memory twice failed: %s "
                "(lower OPENREG_DEVICE_MEMORY if address space is limited)",
                device, size, strerror(e));
  }
  // A child must not share (and scribble on) the parent's device memory.
  madvise(view, size, MADV_DONTFORK);
  madvise(kernel, size, MADV_DONTFORK);
  // DOC END: double-mapping

  fd_ = fd;
  view_ = static_cast<char*>(view);
  kernel_ = static_cast<char*>(kernel);
  size_ = size;

  Range& r = g_ranges[device];
  r.view.store(uintptr_t(view), std::memory_order_relaxed);
  r.kernel.store(uintptr_t(kernel), std::memory_order_relaxed);
  r.size.store(size, std::memory_order_release);
  int limit = g_rangeLimit.load(std::memory_order_relaxed);
  while (limit < device + 1 &&
         !g_rangeLimit.compare_exchange_weak(limit, device + 1,
                                             std::memory_order_release)) {
  }
  return orSuccess;
}

void Arena::punchHole(size_t offset, size_t length) {
  // Failure only means the memory stays resident; nothing to report.
  fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(offset),
            off_t(length));
}

namespace {

// Memory imported from other processes, looked up after the devices. Readers
// retry while a writer is between the two increments of `seq` (a seqlock), so
// they never combine the fields of two different mappings.
struct Hit {
  int device = -1;
  int importSlot = -1;
  uintptr_t view = 0;
  uintptr_t kernel = 0;
};

template <bool kKernel>
__attribute__((noinline)) bool matchImports(uintptr_t p, Hit* hit) {
  int limit = g_importLimit.load(std::memory_order_acquire);
  for (int i = 0; i < limit; ++i) {
    ImportRange& r = g_imports[i];
    for (;;) {
      uint32_t before = r.seq.load(std::memory_order_acquire);
      if (before & 1) continue;  // a writer is mid-update (never for long)
      size_t size = r.size.load(std::memory_order_relaxed);
      uintptr_t view = r.view.load(std::memory_order_relaxed);
      uintptr_t kernel = r.kernel.load(std::memory_order_relaxed);
      int device = r.device.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (r.seq.load(std::memory_order_relaxed) != before) continue;
      if (p - (kKernel ? kernel : view) < size) {
        *hit = Hit{device, i, view, kernel};
        return true;
      }
      break;
    }
  }
  return false;
}

// Out of line, so that the device scans below need no stack frame.
template <bool kKernel>
__attribute__((noinline)) int importedDevice(uintptr_t p) {
  Hit hit;
  return matchImports<kKernel>(p, &hit) ? hit.device : -1;
}

// The other view's address of imported memory, or nullptr.
template <bool kKernel>
__attribute__((noinline)) void* translateImported(uintptr_t p) {
  Hit hit;
  if (!matchImports<kKernel>(p, &hit)) return nullptr;
  return reinterpret_cast<void*>(kKernel ? hit.view + (p - hit.kernel)
                                         : hit.kernel + (p - hit.view));
}

}  // namespace

int deviceOfView(uintptr_t p) {
  int limit = g_rangeLimit.load(std::memory_order_acquire);
  for (int d = 0; d < limit; ++d) {
    size_t size = g_ranges[d].size.load(std::memory_order_acquire);
    if (p - g_ranges[d].view.load(std::memory_order_relaxed) < size) return d;
  }
  return importedDevice<false>(p);
}

int deviceOfKernel(uintptr_t p) {
  int limit = g_rangeLimit.load(std::memory_order_acquire);
  for (int d = 0; d < limit; ++d) {
    size_t size = g_ranges[d].size.load(std::memory_order_acquire);
    if (p - g_ranges[d].kernel.load(std::memory_order_relaxed) < size) return d;
  }
  return importedDevice<true>(p);
}

void publishedViews(int device, uintptr_t* view, uintptr_t* kernel, size_t* size) {
  *size = g_ranges[device].size.load(std::memory_order_acquire);
  *view = *size == 0 ? 0 : g_ranges[device].view.load(std::memory_order_relaxed);
  *kernel = *size == 0 ? 0 : g_ranges[device].kernel.load(std::memory_order_relaxed);
}

// DOC START: view-to-kernel
void* viewToKernel(uintptr_t p) {
  int limit = g_rangeLimit.load(std::memory_order_acquire);
  for (int d = 0; d < limit; ++d) {
    size_t size = g_ranges[d].size.load(std::memory_order_acquire);
    uintptr_t off = p - g_ranges[d].view.load(std::memory_order_relaxed);
    if (off < size) {
      return reinterpret_cast<void*>(
          g_ranges[d].kernel.load(std::memory_order_relaxed) + off);
    }
  }
  return translateImported<false>(p);  // another process's memory (IPC)?
}
// DOC END: view-to-kernel

void* kernelToView(uintptr_t p) {
  int limit = g_rangeLimit.load(std::memory_order_acquire);
  for (int d = 0; d < limit; ++d) {
    size_t size = g_ranges[d].size.load(std::memory_order_acquire);
    uintptr_t off = p - g_ranges[d].kernel.load(std::memory_order_relaxed);
    if (off < size) {
      return reinterpret_cast<void*>(
          g_ranges[d].view.load(std::memory_order_relaxed) + off);
    }
  }
  return translateImported<true>(p);
}

int importSlotOfView(uintptr_t p, uintptr_t* viewBase) {
  Hit hit;
  if (!matchImports<false>(p, &hit)) return -1;
  if (viewBase != nullptr) *viewBase = hit.view;
  return hit.importSlot;
}

int publishImportRange(int device, uintptr_t view, uintptr_t kernel, size_t size) {
  for (int i = 0; i < kMaxImportRanges; ++i) {
    ImportRange& r = g_imports[i];
    if (r.size.load(std::memory_order_relaxed) != 0) continue;
    uint32_t seq = r.seq.load(std::memory_order_relaxed);
    r.seq.store(seq + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    r.view.store(view, std::memory_order_relaxed);
    r.kernel.store(kernel, std::memory_order_relaxed);
    r.device.store(device, std::memory_order_relaxed);
    r.size.store(size, std::memory_order_relaxed);
    r.seq.store(seq + 2, std::memory_order_release);
    if (g_importLimit.load(std::memory_order_relaxed) < i + 1) {
      g_importLimit.store(i + 1, std::memory_order_release);
    }
    return i;
  }
  return -1;
}

void retireImportRange(int slot) {
  ImportRange& r = g_imports[slot];
  uint32_t seq = r.seq.load(std::memory_order_relaxed);
  r.seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  r.size.store(0, std::memory_order_relaxed);
  r.view.store(0, std::memory_order_relaxed);
  r.kernel.store(0, std::memory_order_relaxed);
  r.seq.store(seq + 2, std::memory_order_release);
}

}  // namespace openreg
