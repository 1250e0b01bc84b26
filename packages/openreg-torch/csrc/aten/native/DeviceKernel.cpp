#include "aten/native/DeviceKernel.h"

#include <ATen/ops/empty_strided.h>

#include "aten/native/KernelView.h"
#include "runtime/OpenRegDeviceAllocator.h"

namespace at::native::openreg {

std::optional<c10::Storage> adopt_storage(const c10::Storage& storage, size_t references,
                                          c10::Device device) {
  c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
  if (!is_routed(impl->data_ptr()) || storage.use_count() != references) {
    return std::nullopt;
  }
  return c10::Storage(c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), impl->nbytes(),
      adopt_routed(impl->mutable_data_ptr(), device.index()),
      &c10::openreg::getDeviceAllocator(), /*resizable=*/true));
}

at::Tensor device_tensor_over(c10::Storage storage, const at::Tensor& like) {
  at::Tensor result = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), like.dtype());
  result.unsafeGetTensorImpl()->set_sizes_and_strides(like.sizes(), like.strides(),
                                                       like.storage_offset());
  result._set_conj(like.is_conj());
  result._set_neg(like.is_neg());
  return result;
}

at::Tensor to_device_result(const at::Tensor& result, c10::Device device) {
  if (!result.defined() || result.device().type() != c10::kCPU) {
    return result;
  }
  TORCH_CHECK(result.layout() == c10::kStrided, "openreg: a kernel produced a ",
              result.layout(), " tensor; openreg supports strided tensors only");
  if (auto adopted = adopt_storage(result.storage(), 1, device)) {
    return device_tensor_over(std::move(*adopted), result);
  }
  // Host memory (e.g. allocated by a worker thread) or shared: copy it over.
  at::Tensor copy = at::empty_strided(result.sizes(), result.strides(),
                                      result.options().device(device));
  kernel_alias(copy).copy_(result);
  return copy;
}

} // namespace at::native::openreg
