#include "execution/KernelView.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/StorageImpl.h>

#include "runtime/OpenRegException.h"

namespace at::native::openreg {

void* kernel_pointer(const void* device_pointer) {
  if (device_pointer == nullptr) {
    return nullptr;
  }
  void* kernel = nullptr;
  OPENREG_CHECK(orGetKernelPointer(&kernel, device_pointer));
  return kernel;
}

// DOC START: kernel-alias
at::Tensor kernel_alias(const at::Tensor& device_tensor, c10::Allocator* allocator) {
  if (!device_tensor.defined()) {
    return device_tensor;
  }
  const c10::Storage& storage = device_tensor.storage();
  // The alias does not own the memory: the device tensor outlives every kernel.
  c10::DataPtr view(kernel_pointer(storage.data()), c10::Device(c10::kCPU));
  auto alias_storage = c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), storage.nbytes(), std::move(view), allocator,
      /*resizable=*/allocator != nullptr);
  at::Tensor alias = at::detail::make_tensor<c10::TensorImpl>(
      c10::Storage(std::move(alias_storage)), c10::DispatchKeySet(c10::DispatchKey::CPU),
      device_tensor.dtype());
  alias.unsafeGetTensorImpl()->set_sizes_and_strides(
      device_tensor.sizes(), device_tensor.strides(), device_tensor.storage_offset());
  alias._set_conj(device_tensor.is_conj());
  alias._set_neg(device_tensor.is_neg());
  return alias;
}
// DOC END: kernel-alias

} // namespace at::native::openreg
