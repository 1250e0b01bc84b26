#pragma once

// Device tensors seen through the kernel view: a CPU tensor with the same sizes,
// strides, storage offset, dtype and conjugate/negative bits, whose storage aliases the
// device storage's read-write kernel mapping. CPU kernels run on it without any copy.

#include <ATen/core/Tensor.h>
#include <openreg/openreg.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "runtime/OpenRegMacros.h"

namespace at::native::openreg {

// The kernel-view alias of an openreg tensor (undefined stays undefined). A resizable
// alias may be grown by a kernel (out= arguments); its storage then allocates from
// `allocator` and the caller moves the new memory back into the device storage.
OPENREG_TORCH_API at::Tensor kernel_alias(const at::Tensor& device_tensor,
                                           c10::Allocator* allocator = nullptr);

// The kernel-view alias of an openreg tensor the kernel only reads or writes in place
// (never resizes): the same as kernel_alias(device_tensor), but an alias this thread
// made earlier for the same tensor is reused while it still describes it exactly and
// nothing else holds it. Each alias costs three heap objects (tensor, storage, version
// counter); a tensor used op after op (`a * b + a`) is aliased once. The reference is
// valid until this thread's next call.
OPENREG_TORCH_API const at::Tensor& input_kernel_alias(const at::Tensor& device_tensor);

// DOC START: known-device-views
namespace detail {
// Where each device's own memory lies in both views, learned from the runtime
// (orDeviceGetMemoryViews) when an address of that device is first translated. Every
// launch translates its operands: inside a known range that is a subtraction and an
// addition here instead of a runtime call (318 of the ~2,400 instructions openreg added
// to a 1-element `a * b + a`). Forgotten in a forked child, whose runtime then refuses
// the address.
struct DeviceViews {
  std::atomic<size_t> size{0};  // 0 while unknown: matches no address
  std::atomic<uintptr_t> device_view{0};
  std::atomic<std::ptrdiff_t> kernel_shift{0};  // kernel view minus device view
};
OPENREG_TORCH_API extern std::array<DeviceViews, OR_MAX_DEVICES> known_device_views;
OPENREG_TORCH_API extern std::atomic<int> known_device_count;  // one past the highest known

// The runtime's translation (which raises for an address that is not device memory),
// learning the views of the address's device on the way.
OPENREG_TORCH_API void* translate_and_learn(const void* device_pointer);
} // namespace detail

// The kernel-view address of this process's own device memory on a device whose views
// are known, else nullptr (host memory, memory opened from another process, nullptr).
inline void* known_kernel_pointer(const void* device_pointer) noexcept {
  const auto address = reinterpret_cast<uintptr_t>(device_pointer);
  const int count = detail::known_device_count.load(std::memory_order_acquire);
  for (int device = 0; device < count; ++device) {
    const detail::DeviceViews& views = detail::known_device_views[device];
    const size_t size = views.size.load(std::memory_order_acquire);
    if (address - views.device_view.load(std::memory_order_relaxed) < size) {
      return reinterpret_cast<void*>(address +
                                     views.kernel_shift.load(std::memory_order_relaxed));
    }
  }
  return nullptr;
}

// The kernel-view address of device memory (nullptr stays nullptr); raises for an
// address that is not device memory.
inline void* kernel_pointer(const void* device_pointer) {
  void* kernel = known_kernel_pointer(device_pointer);
  return kernel != nullptr || device_pointer == nullptr
      ? kernel : detail::translate_and_learn(device_pointer);
}
// DOC END: known-device-views

} // namespace at::native::openreg
