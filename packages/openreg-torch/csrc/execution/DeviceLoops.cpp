#include "execution/DeviceLoops.h"

#include <c10/util/SmallVector.h>

#include "execution/DeviceCall.h"
#include "runtime/OpenRegException.h"

namespace at::native::openreg {
namespace {

// How far the kernel view of an operand's memory is from its device view. Zero for a
// CPU scalar operand (TensorIterator lets one join a device computation).
std::ptrdiff_t kernel_view_shift(const TensorIteratorBase& iter, int arg) {
  if (iter.device(arg).is_cpu()) {
    return 0;
  }
  const void* device_address = iter.data_ptr(arg);
  void* kernel_address = nullptr;
  OPENREG_CHECK(orGetKernelPointer(&kernel_address, device_address));
  return static_cast<char*>(kernel_address) - static_cast<const char*>(device_address);
}

} // namespace

// DOC START: launch-elementwise
void launch_elementwise(TensorIteratorBase& iter, std::string_view name, KernelLoop2d loop) {
  if (iter.numel() == 0) {
    return;  // nothing to touch (and an empty operand may have no memory at all)
  }
  // TensorIterator already checked its operands' devices (CPU scalars allowed).
  TORCH_CHECK(iter.device().type() == c10::kPrivateUse1, "openreg: ", name,
              " expected openreg tensors, got tensors on ", iter.device());
  DeviceCall call(name);
  call.use_device(iter.device());
  const int ntensors = iter.ntensors();
  c10::SmallVector<std::ptrdiff_t, 4> shift(ntensors);
  for (int arg = 0; arg < ntensors; ++arg) {
    shift[arg] = kernel_view_shift(iter, arg);
  }
  // The outputs exist already: nothing fresh to route.
  call.launch([&] {
    iter.for_each([&](char** data, const int64_t* strides, int64_t size0, int64_t size1) {
      c10::SmallVector<char*, 4> kernel_data;
      for (int arg = 0; arg < ntensors; ++arg) {
        kernel_data.push_back(data[arg] + shift[arg]);
      }
      loop(kernel_data.data(), strides, size0, size1);
    });
  }, Allocations::Host);
}
// DOC END: launch-elementwise

} // namespace at::native::openreg
