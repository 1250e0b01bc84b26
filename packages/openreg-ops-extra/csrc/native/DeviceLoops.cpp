#include "native/DeviceLoops.h"

#include <c10/core/DeviceGuard.h>
#include <c10/util/SmallVector.h>
#include <openreg/openreg.h>
#include <openreg_torch/runtime/OpenRegException.h>
#include <openreg_torch/runtime/OpenRegKernelLaunch.h>
#include <openreg_torch/runtime/OpenRegStream.h>

namespace at::native::openreg_extra {
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
void launch_elementwise(TensorIteratorBase& iter, KernelLoop2d loop) {
  if (iter.numel() == 0) {
    return;  // nothing to touch (and an empty operand may have no memory at all)
  }
  const c10::Device device = iter.device();
  TORCH_CHECK(device.type() == c10::kPrivateUse1,
              "openreg_ops_extra: expected openreg tensors, got tensors on ", device);
  const int ntensors = iter.ntensors();
  c10::SmallVector<std::ptrdiff_t, 4> shift(ntensors);
  for (int arg = 0; arg < ntensors; ++arg) {
    shift[arg] = kernel_view_shift(iter, arg);
  }
  const c10::DeviceGuard guard(device);
  c10::openreg::launch_kernel(c10::openreg::getCurrentOpenRegStream(device.index()), [&] {
    iter.for_each([&](char** data, const int64_t* strides, int64_t size0, int64_t size1) {
      c10::SmallVector<char*, 4> kernel_data;
      for (int arg = 0; arg < ntensors; ++arg) {
        kernel_data.push_back(data[arg] + shift[arg]);
      }
      loop(kernel_data.data(), strides, size0, size1);
    });
  });
}
// DOC END: launch-elementwise

} // namespace at::native::openreg_extra
