#include "execution/AllocationRouting.h"

#include <c10/core/CPUAllocator.h>

#include "execution/KernelView.h"
#include "runtime/OpenRegDeviceAllocator.h"
#include "runtime/OpenRegException.h"

namespace at::native::openreg {
namespace {

// The stream of the kernel this thread runs with routing on (nullptr: off).
OPENREG_HOT_THREAD_LOCAL const c10::openreg::OpenRegStream* routed_stream = nullptr;
c10::DeleterFnPtr host_deleter = nullptr;

void free_routed(void* kernel_pointer) {
  void* device_pointer = nullptr;
  OPENREG_CHECK(orGetDevicePointer(&device_pointer, kernel_pointer));
  c10::openreg::getDeviceAllocator().raw_deleter()(device_pointer);
}

// For raw_allocate/raw_deallocate pairs: frees are told apart by address, not thread.
void free_any(void* pointer) {
  if (orDeviceOfKernelPointer(pointer) >= 0) {
    free_routed(pointer);
  } else {
    host_deleter(pointer);
  }
}

// DOC START: routing-allocator
// Installed once as PyTorch's CPU allocator, when the first openreg kernel runs (not
// when the library loads: a process that never runs openreg work keeps PyTorch's own
// CPU allocator untouched). Off the routing threads it forwards to the allocator it
// replaced; on them it hands out device memory by its kernel address.
class RoutingAllocator final : public c10::Allocator {
 public:
  explicit RoutingAllocator(c10::Allocator* host) : host_(host) {}

  c10::DataPtr allocate(size_t nbytes) override {
    const c10::openreg::OpenRegStream* stream = routed_stream;
    if (C10_LIKELY(stream == nullptr) || nbytes == 0) {
      return host_->allocate(nbytes);
    }
    c10::DataPtr device = c10::openreg::allocateOnStream(nbytes, *stream);
    void* device_pointer = device.release_context();
    void* kernel = kernel_pointer(device_pointer);
    // context == data, as raw_allocate requires; frees are recognised by the deleter.
    return {kernel, kernel, &free_routed, c10::Device(c10::kCPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override {
    return &free_any;
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

 private:
  c10::Allocator* host_;
};
// DOC END: routing-allocator

// Installs the routing allocator on first use (thread-safe: a function-local static).
RoutingAllocator* installed_allocator() {
  static RoutingAllocator* allocator = [] {
    c10::Allocator* host = c10::GetCPUAllocator();
    host_deleter = host->raw_deleter();
    auto* routing = new RoutingAllocator(host);
    c10::SetCPUAllocator(routing, /*priority=*/1);
    return routing;
  }();
  return allocator;
}

} // namespace

RouteAllocationsToDevice::RouteAllocationsToDevice(const c10::openreg::OpenRegStream& stream)
    : previous_(routed_stream) {
  c10::Allocator* routing = installed_allocator();
  TORCH_CHECK(c10::GetCPUAllocator() == routing,
              "openreg: another CPU allocator replaced openreg's routing allocator");
  routed_stream = &stream;
}

RouteAllocationsToDevice::~RouteAllocationsToDevice() {
  routed_stream = previous_;
}

c10::Allocator* routing_allocator() {
  return installed_allocator();
}

bool is_routed(const c10::DataPtr& data_ptr) {
  return data_ptr.get_deleter() == &free_routed;
}

c10::DataPtr adopt_routed(c10::DataPtr& data_ptr, c10::DeviceIndex device) {
  TORCH_INTERNAL_ASSERT(is_routed(data_ptr));
  void* kernel = data_ptr.release_context();
  void* device_pointer = nullptr;
  OPENREG_CHECK(orGetDevicePointer(&device_pointer, kernel));
  return {device_pointer, device_pointer, c10::openreg::getDeviceAllocator().raw_deleter(),
          c10::Device(c10::kPrivateUse1, device)};
}

} // namespace at::native::openreg
