#pragma once

// While a CPU kernel runs "on the device", the CPU allocations it makes on the calling
// thread are served from device memory (seen through the kernel view). Its fresh
// outputs then already live on the device and are adopted, not copied.

#include <c10/core/Allocator.h>
#include <c10/core/Device.h>

#include "runtime/OpenRegStream.h"

namespace at::native::openreg {

// DOC START: routing-guard
// Routes this thread's CPU allocations to the device of `stream`, for work on `stream`,
// for the guard's lifetime. `stream` must outlive the guard.
class RouteAllocationsToDevice {
 public:
  explicit RouteAllocationsToDevice(const c10::openreg::OpenRegStream& stream);
  ~RouteAllocationsToDevice();
  RouteAllocationsToDevice(const RouteAllocationsToDevice&) = delete;
  RouteAllocationsToDevice& operator=(const RouteAllocationsToDevice&) = delete;

 private:
  const c10::openreg::OpenRegStream* previous_;
};
// DOC END: routing-guard

// The allocator CPU storages get while routing is on (use it for resizable aliases).
c10::Allocator* routing_allocator();

// Whether `data_ptr` is a routed allocation (device memory behind a CPU DataPtr).
bool is_routed(const c10::DataPtr& data_ptr);

// Takes ownership of a routed allocation out of `data_ptr` (which no longer frees it)
// and returns it as a device DataPtr of `device`.
c10::DataPtr adopt_routed(c10::DataPtr& data_ptr, c10::DeviceIndex device);

} // namespace at::native::openreg
