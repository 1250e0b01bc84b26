#include "execution/SparseKernelView.h"

#include <ATen/SparseCsrTensorImpl.h>
#include <ATen/SparseTensorImpl.h>
#include <c10/core/DeviceGuard.h>

namespace at::native::openreg {
namespace {

SparseTensorImpl* coo_impl(const at::Tensor& tensor) {
  return static_cast<SparseTensorImpl*>(tensor.unsafeGetTensorImpl());
}

SparseCsrTensorImpl* compressed_impl(const at::Tensor& tensor) {
  return static_cast<SparseCsrTensorImpl*>(tensor.unsafeGetTensorImpl());
}

} // namespace

bool is_sparse_layout(c10::Layout layout) {
  switch (layout) {
    case c10::kSparse:
    case c10::kSparseCsr:
    case c10::kSparseCsc:
    case c10::kSparseBsr:
    case c10::kSparseBsc:
      return true;
    default:
      return false;
  }
}

c10::SmallVector<at::Tensor, 3> sparse_members(const at::Tensor& sparse) {
  if (sparse.layout() == c10::kSparse) {
    const SparseTensorImpl* impl = coo_impl(sparse);
    return {impl->indices(), impl->values()};
  }
  const SparseCsrTensorImpl* impl = compressed_impl(sparse);
  return {impl->compressed_indices(), impl->plain_indices(), impl->values()};
}

// DOC START: sparse-tensor-over
at::Tensor sparse_tensor_over(const at::Tensor& like, c10::ArrayRef<at::Tensor> members,
                              c10::Device device) {
  // The constructors give a fresh tensor empty members on the current device.
  c10::OptionalDeviceGuard guard;
  if (!device.is_cpu()) {
    guard.reset_device(device);
  }
  const bool on_cpu = device.is_cpu();
  at::Tensor tensor;
  if (like.layout() == c10::kSparse) {
    tensor = at::detail::make_tensor<SparseTensorImpl>(
        c10::DispatchKeySet(on_cpu ? c10::DispatchKey::SparseCPU
                                   : c10::DispatchKey::SparsePrivateUse1),
        like.dtype());
  } else {
    tensor = at::detail::make_tensor<SparseCsrTensorImpl>(
        c10::DispatchKeySet(on_cpu ? c10::DispatchKey::SparseCsrCPU
                                   : c10::DispatchKey::SparseCsrPrivateUse1),
        device, like.layout(), like.dtype());
  }
  set_sparse_members(tensor, like, members);
  return tensor;
}
// DOC END: sparse-tensor-over

void set_sparse_members(const at::Tensor& sparse, const at::Tensor& like,
                        c10::ArrayRef<at::Tensor> members) {
  TORCH_INTERNAL_ASSERT(sparse.layout() == like.layout() &&
                        members.size() == sparse_members(like).size());
  if (like.layout() == c10::kSparse) {
    SparseTensorImpl* impl = coo_impl(sparse);
    const SparseTensorImpl* source = coo_impl(like);
    if (impl->sparse_dim() != source->sparse_dim() || impl->dense_dim() != source->dense_dim() ||
        impl->sizes() != source->sizes()) {
      impl->raw_resize_(source->sparse_dim(), source->dense_dim(), source->sizes());
    }
    impl->set_indices_and_values_unsafe(members[0], members[1]);
    impl->set_coalesced(source->coalesced());
    return;
  }
  compressed_impl(sparse)->set_member_tensors(members[0], members[1], members[2], like.sizes());
}

} // namespace at::native::openreg
