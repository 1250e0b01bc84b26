#pragma once

// openreg's own sparse kernels are PyTorch's device-generic ones (the kernels SparseCPU,
// SparseCUDA and SparseMeta share for factories, member accessors, resizing and
// sparse-to-sparse copies): they only build and swap members through openreg's dense
// operators. PyTorch's generated wrappers put a device guard around them; registered
// directly, they get the same guard here: a sparse tensor made for openreg:1 must have
// its (empty) members made on openreg:1, not on the current device.

#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>

#include <optional>
#include <utility>

namespace at::native::openreg {

namespace sparse_detail {

inline void guard_device_argument(c10::OptionalDeviceGuard& guard,
                                  const std::optional<c10::Device>& device) {
  if (device.has_value() && device->type() == c10::kPrivateUse1) {
    guard.reset_device(*device);
  }
}
template <typename Value>
void guard_device_argument(c10::OptionalDeviceGuard& /*guard*/, const Value& /*value*/) {}

inline void guard_tensor(c10::OptionalDeviceGuard& guard, const at::Tensor& tensor) {
  if (!guard.current_device().has_value() && tensor.defined() &&
      tensor.device().type() == c10::kPrivateUse1) {
    guard.reset_device(tensor.device());
  }
}
template <typename Value>
void guard_tensor(c10::OptionalDeviceGuard& /*guard*/, const Value& /*value*/) {}

} // namespace sparse_detail

// Kernel under the device of its device argument (factories), else of its first openreg
// tensor, as PyTorch's generated wrappers do.
template <auto Kernel>
struct OnKernelDevice;

template <typename Return, typename... Args, Return (*Kernel)(Args...)>
struct OnKernelDevice<Kernel> {
  static Return call(Args... args) {
    c10::OptionalDeviceGuard guard;
    (sparse_detail::guard_device_argument(guard, args), ...);
    (sparse_detail::guard_tensor(guard, args), ...);
    return Kernel(std::forward<Args>(args)...);
  }
};

} // namespace at::native::openreg
