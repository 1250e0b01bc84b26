#pragma once

// Device management for the openreg backend, after c10/cuda/CUDAFunctions.h: snake_case
// functions throw a c10::Error with a clear message; CamelCase ones are thin wrappers
// returning the runtime's error code.

#include <c10/core/Device.h>
#include <c10/core/DeviceGuard.h>
#include <c10/macros/Macros.h>
#include <openreg/openreg.h>

#include "runtime/OpenRegMacros.h"

namespace c10::openreg {

// DOC START: device-functions
// Number of devices, read from the configuration without starting the runtime; never
// throws (0 if the configuration is malformed), as guards require.
OPENREG_TORCH_API DeviceIndex device_count() noexcept;
OPENREG_TORCH_API DeviceIndex current_device();
// Throws, naming the valid range, when `device` is not a valid index.
OPENREG_TORCH_API void set_device(DeviceIndex device);
// Makes `device` current and returns the previous current device.
OPENREG_TORCH_API DeviceIndex exchange_device(DeviceIndex device);
// Like exchange_device, but -1 means "leave the current device alone".
OPENREG_TORCH_API DeviceIndex maybe_exchange_device(DeviceIndex device);
inline void check_device_index(DeviceIndex device);
// DOC END: device-functions

// Makes `device` current for its lifetime, like c10::DeviceGuard, but sets and restores
// only when another device is current: usually it is current already, and then the guard
// costs one query instead of a query, a set and a restore. An unnamed device (index -1)
// leaves the current one alone.
class CurrentDeviceGuard {
 public:
  CurrentDeviceGuard() = default;
  explicit CurrentDeviceGuard(Device device) { make_current(device); }

  void make_current(Device device) {
    if (device.index() >= 0 && device.index() != current_device()) {
      guard_.reset_device(device);
    }
  }

 private:
  OptionalDeviceGuard guard_;
};

OPENREG_TORCH_API orError_t GetDeviceCount(int* count);
OPENREG_TORCH_API orError_t GetDevice(DeviceIndex* device);
OPENREG_TORCH_API orError_t SetDevice(DeviceIndex device);
OPENREG_TORCH_API orError_t ExchangeDevice(DeviceIndex to, DeviceIndex* from);
OPENREG_TORCH_API orError_t MaybeExchangeDevice(DeviceIndex to, DeviceIndex* from);

// Whether the device has been made current or has had memory allocated: PyTorch's
// notion of a device with a "primary context" (hasPrimaryContext).
OPENREG_TORCH_API bool device_used(DeviceIndex device) noexcept;
OPENREG_TORCH_API void mark_device_used(DeviceIndex device) noexcept;

// Whether this process was forked after its parent started the runtime. The runtime
// owns this state (it alone knows whether device memory was mapped); never initialises.
OPENREG_TORCH_API bool in_bad_fork() noexcept;

// The device a tensor's data pointer belongs to, or -1 for host memory.
OPENREG_TORCH_API DeviceIndex device_of_pointer(const void* ptr) noexcept;

namespace detail {
// Throws the error check_device_index() reports for an invalid `device`.
[[noreturn]] OPENREG_TORCH_API void throw_invalid_device_index(DeviceIndex device);
} // namespace detail

// Inline: every operator checks its device several times (stream, allocator, guard).
inline void check_device_index(DeviceIndex device) {
  if (C10_UNLIKELY(device < 0 || device >= device_count())) {
    detail::throw_invalid_device_index(device);
  }
}

} // namespace c10::openreg
