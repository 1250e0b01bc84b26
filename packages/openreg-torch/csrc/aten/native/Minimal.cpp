#include "aten/native/Minimal.h"

#include <ATen/EmptyTensor.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/Context.h>
#include <ATen/native/Resize.h>
#include <ATen/native/ResizeCommon.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/ops/_local_scalar_dense_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>

#include "execution/RunOnDevice.h"
#include "runtime/OpenRegDeviceAllocator.h"
#include "runtime/OpenRegFunctions.h"

namespace at::native::openreg {
namespace {

constexpr c10::DispatchKeySet kOpenRegKeys(c10::DispatchKey::PrivateUse1);

c10::Device target_device(std::optional<c10::Device> device) {
  if (device.has_value() && device->has_index()) {
    c10::openreg::check_device_index(device->index());
    return *device;
  }
  return {c10::kPrivateUse1, c10::openreg::current_device()};
}

void check_not_pinned(std::optional<bool> pin_memory) {
  TORCH_CHECK(!pin_memory.value_or(false),
              "openreg: only host (CPU) tensors can be pinned; got pin_memory=True for an "
              "openreg tensor");
}

// Makes sure the storage holds the tensor's elements after its sizes/strides changed.
void ensure_storage_fits(const Tensor& self) {
  auto* impl = self.unsafeGetTensorImpl();
  if (impl->numel() == 0) {
    return;
  }
  const size_t needed = at::detail::computeStorageNbytes(
      impl->sizes(), impl->strides(), impl->dtype().itemsize(), impl->storage_offset());
  const c10::Storage& storage = impl->unsafe_storage();
  if (needed > storage.nbytes()) {
    // The hook PyTorch itself calls to resize openreg storages (OpenRegHooks.cpp).
    at::detail::getPrivateUse1Hooks().resizePrivateUse1Bytes(storage, needed);
  }
}

// DOC START: deterministic-fill
// Under torch.use_deterministic_algorithms(True), fresh memory is filled (NaN for
// floating and complex types, the largest value for integers and bool) unless the user
// turned torch.utils.deterministic.fill_uninitialized_memory off, as the CPU and CUDA
// factories do: results never depend on what the allocator happened to hand out.
bool fill_uninitialized_memory() {
  const auto& context = at::globalContext();
  return C10_UNLIKELY(context.deterministicAlgorithms()) &&
         context.deterministicFillUninitializedMemory();
}

Tensor filled_if_deterministic(Tensor fresh) {
  if (fill_uninitialized_memory()) {
    at::native::fill_empty_deterministic_(fresh);  // fill_ runs as an openreg kernel
  }
  return fresh;
}
// DOC END: deterministic-fill

} // namespace

// DOC START: empty-memory-format
Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                           std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                           std::optional<bool> pin_memory,
                           std::optional<c10::MemoryFormat> memory_format) {
  check_not_pinned(pin_memory);
  TORCH_CHECK(layout.value_or(c10::kStrided) == c10::kStrided,
              "openreg: only strided tensors are supported, got layout ", *layout);
  const c10::openreg::CurrentDeviceGuard guard(target_device(device));
  return filled_if_deterministic(at::detail::empty_generic(
      size, &c10::openreg::getDeviceAllocator(), kOpenRegKeys, c10::dtype_or_default(dtype),
      memory_format));
}
// DOC END: empty-memory-format

Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                     std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                     std::optional<c10::Device> device, std::optional<bool> pin_memory) {
  check_not_pinned(pin_memory);
  TORCH_CHECK(layout.value_or(c10::kStrided) == c10::kStrided,
              "openreg: only strided tensors are supported, got layout ", *layout);
  const c10::openreg::CurrentDeviceGuard guard(target_device(device));
  return filled_if_deterministic(at::detail::empty_strided_generic(
      size, stride, &c10::openreg::getDeviceAllocator(), kOpenRegKeys,
      c10::dtype_or_default(dtype)));
}

Tensor as_strided(const Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride,
                  std::optional<int64_t> storage_offset) {
  return at::native::as_strided_tensorimpl(self, size, stride, storage_offset);
}

Tensor view(const Tensor& self, c10::IntArrayRef size) {
  return at::native::view(self, size);
}

Tensor _reshape_alias(const Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride) {
  return at::native::_reshape_alias(self, size, stride);
}

// DOC START: resize
const Tensor& resize_(const Tensor& self, c10::IntArrayRef size,
                      std::optional<c10::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  const size_t old_nbytes = impl->unsafe_storage() ? impl->unsafe_storage().nbytes() : 0;
  // The CPU resize would grow the storage with the CPU allocator and memcpy device
  // memory on the host; here only sizes/strides are set, then the storage is grown
  // with the device allocator.
  at::native::resize_impl_cpu_(impl, size, /*stride=*/std::nullopt, /*resize_storage=*/false);
  if (memory_format.has_value()) {
    TORCH_CHECK(*memory_format != c10::MemoryFormat::Preserve,
                "openreg: unsupported memory format ", *memory_format);
    impl->empty_tensor_restride(*memory_format);
  }
  ensure_storage_fits(self);
  if (fill_uninitialized_memory()) {
    // As on the CPU: the bytes the storage grew by, not the ones it kept.
    at::native::fill_resize_deterministic_(self, static_cast<int64_t>(old_nbytes));
  }
  return self;
}
// DOC END: resize

// DOC START: local-scalar-dense
c10::Scalar _local_scalar_dense(const Tensor& self) {
  // .item(): read the element through the kernel view, in stream order (so it waits
  // for the work that produces it, as a CUDA .item() synchronises).
  return run_on_device<c10::Scalar>(
      "aten::_local_scalar_dense",
      [](const Tensor& alias) { return at::native::_local_scalar_dense_cpu(alias); }, self);
}
// DOC END: local-scalar-dense

Tensor& set_source_Storage_storage_offset(Tensor& self, c10::Storage source,
                                          int64_t storage_offset, c10::IntArrayRef size,
                                          c10::IntArrayRef stride) {
  at::native::checkSetStorage(self, std::move(source), storage_offset, size, stride);
  self.unsafeGetTensorImpl()->set_storage_offset(storage_offset);
  const at::OptionalIntArrayRef strides =
      stride.data() != nullptr ? at::OptionalIntArrayRef(stride) : std::nullopt;
  at::native::resize_impl_cpu_(self.unsafeGetTensorImpl(), size, strides,
                               /*resize_storage=*/false);
  ensure_storage_fits(self);
  return self;
}

Tensor& set_source_Storage(Tensor& self, c10::Storage source) {
  const int64_t elements = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return set_source_Storage_storage_offset(self, std::move(source), 0, {elements}, {});
}

Tensor& set_source_Tensor(Tensor& self, const Tensor& source) {
  if (self.unsafeGetTensorImpl() == source.unsafeGetTensorImpl()) {
    return self;
  }
  return set_source_Storage_storage_offset(self, source.storage(), source.storage_offset(),
                                           source.sizes(), source.strides());
}

Tensor& set_empty(Tensor& self) {
  const c10::DeviceGuard guard(self.device());
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0, &c10::openreg::getDeviceAllocator(),
                     /*resizable=*/true);
  return set_source_Storage_storage_offset(self, std::move(empty), 0, {0}, {});
}

void record_stream(Tensor& self, c10::Stream stream) {
  TORCH_CHECK(stream.device_type() == c10::kPrivateUse1,
              "openreg: record_stream expects an openreg stream, got one on ", stream.device());
  c10::openreg::getDeviceAllocator().recordStream(self.storage().data_ptr(), stream);
}

} // namespace at::native::openreg
