// Allocation, pointer attributes and view translation (cudaMalloc, cudaFree,
// cudaMallocHost, cudaPointerGetAttributes).
#include <cstring>

#include "Arena.h"
#include "Device.h"
#include "Errors.h"
#include "HostAllocator.h"
#include "Ipc.h"
#include "Runtime.h"

using namespace openreg;

extern "C" {

OR_API orError_t orMalloc(void** ptr, size_t size) {
  OR_ENTER();
  if (ptr == nullptr) return fail(orErrorInvalidValue, "orMalloc: ptr is NULL");
  *ptr = nullptr;
  OR_RETURN_IF_ERROR(checkDeviceIndex(t_currentDevice));
  if (size == 0) return orSuccess;
  return device(t_currentDevice).allocator.allocate(size, ptr);
}

OR_API orError_t orFree(void* ptr) {
  OR_ENTER();
  if (ptr == nullptr) return orSuccess;
  int d = deviceOfView(uintptr_t(ptr));
  if (d < 0) {
    HostRange pinned;
    bool isPinned = findPinned(uintptr_t(ptr), &pinned);
    return fail(orErrorInvalidDevicePointer, "orFree: %p is not device memory%s", ptr,
                isPinned ? " (pinned host memory is freed with orFreeHost)" : "");
  }
  if (importSlotOfView(uintptr_t(ptr), nullptr) >= 0) {
    return fail(orErrorInvalidDevicePointer,
                "orFree: %p is memory opened from another process; close it with "
                "orIpcCloseMemHandle",
                ptr);
  }
  return device(d).allocator.release(uintptr_t(ptr));
}

OR_API orError_t orMallocHost(void** ptr, size_t size) {
  OR_ENTER();
  if (ptr == nullptr) return fail(orErrorInvalidValue, "orMallocHost: ptr is NULL");
  *ptr = nullptr;
  if (size == 0) return orSuccess;
  return hostAllocate(size, ptr);
}

OR_API orError_t orFreeHost(void* ptr) {
  OR_ENTER();
  if (ptr == nullptr) return orSuccess;
  return hostRelease(ptr);
}

OR_API orError_t orPointerGetAttributes(orPointerAttributes* attributes,
                                        const void* ptr) {
  OR_ENTER();
  if (attributes == nullptr) {
    return fail(orErrorInvalidValue, "orPointerGetAttributes: attributes is NULL");
  }
  orPointerAttributes a;
  memset(&a, 0, sizeof(a));
  a.device = -1;
  uintptr_t p = uintptr_t(ptr);
  int d = deviceOfView(p);
  if (d >= 0) {
    Allocation alloc;
    if (!findAllocation(d, p, &alloc)) {
      return fail(orErrorInvalidDevicePointer,
                  "%p lies in device %d's memory but not inside a live allocation "
                  "(freed, or past the end of one)",
                  ptr, d);
    }
    a.type = orMemoryTypeDevice;
    a.device = d;
    a.devicePointer = const_cast<void*>(ptr);
    a.base = reinterpret_cast<void*>(alloc.base);
    a.size = alloc.size;
  } else {
    HostRange host;
    if (findPinned(p, &host)) {
      a.type = orMemoryTypeHost;
      a.base = reinterpret_cast<void*>(host.base);
      a.size = host.size;
    } else {
      a.type = orMemoryTypeUnregistered;
    }
    a.hostPointer = const_cast<void*>(ptr);
  }
  *attributes = a;
  return orSuccess;
}

// DOC START: orGetKernelPointer
OR_API orError_t orGetKernelPointer(void** kernelPtr, const void* devPtr) {
  OR_ENTER();
  if (kernelPtr == nullptr) {
    return fail(orErrorInvalidValue, "orGetKernelPointer: kernelPtr is NULL");
  }
  void* k = viewToKernel(uintptr_t(devPtr));
  if (k == nullptr) {
    return fail(orErrorInvalidDevicePointer,
                "orGetKernelPointer: %p is not in any device's memory", devPtr);
  }
  *kernelPtr = k;
  return orSuccess;
}
// DOC END: orGetKernelPointer

OR_API orError_t orGetDevicePointer(void** devPtr, const void* kernelPtr) {
  OR_ENTER();
  if (devPtr == nullptr) return fail(orErrorInvalidValue, "orGetDevicePointer: devPtr is NULL");
  void* v = kernelToView(uintptr_t(kernelPtr));
  if (v == nullptr) {
    return fail(orErrorInvalidDevicePointer,
                "orGetDevicePointer: %p is not in any device's kernel view", kernelPtr);
  }
  *devPtr = v;
  return orSuccess;
}

OR_API int orDeviceOfPointer(const void* ptr) {
  // A forked child has no device memory, whatever its stale tables say.
  if (g_state.load(std::memory_order_acquire) == kForked) return -1;
  return deviceOfView(uintptr_t(ptr));
}

OR_API int orDeviceOfKernelPointer(const void* ptr) {
  if (g_state.load(std::memory_order_acquire) == kForked) return -1;
  return deviceOfKernel(uintptr_t(ptr));
}

OR_API orError_t orDeviceGetMemoryViews(int device, void** deviceView, void** kernelView,
                                        size_t* size) {
  if (deviceView == nullptr || kernelView == nullptr || size == nullptr) {
    return fail(orErrorInvalidValue, "orDeviceGetMemoryViews: an output pointer is NULL");
  }
  *deviceView = *kernelView = nullptr;
  *size = 0;
  if (device < 0 || device >= OR_MAX_DEVICES) {
    return fail(orErrorInvalidDevice, "orDeviceGetMemoryViews: invalid device %d", device);
  }
  // A forked child has no device memory (MADV_DONTFORK), whatever its tables say.
  if (g_state.load(std::memory_order_acquire) == kForked) return orSuccess;
  uintptr_t view = 0;
  uintptr_t kernel = 0;
  publishedViews(device, &view, &kernel, size);
  *deviceView = reinterpret_cast<void*>(view);
  *kernelView = reinterpret_cast<void*>(kernel);
  return orSuccess;
}

}  // extern "C"
