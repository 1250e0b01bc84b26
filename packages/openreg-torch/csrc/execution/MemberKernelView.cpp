#include "execution/MemberKernelView.h"

#include <ATen/NestedTensorImpl.h>
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

bool is_nested_impl(const at::Tensor& tensor) {
  return tensor.layout() == c10::kStrided && tensor.is_nested();
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

bool has_members_by_layout(const at::Tensor& tensor) {
  return is_sparse_layout(tensor.layout()) || is_nested_impl(tensor);
}

c10::SmallVector<at::Tensor, 3> member_tensors(const at::Tensor& tensor) {
  if (tensor.layout() == c10::kSparse) {
    const SparseTensorImpl* impl = coo_impl(tensor);
    return {impl->indices(), impl->values()};
  }
  if (is_nested_impl(tensor)) {
    // The whole storage as a flat tensor: components may sit anywhere in it.
    return {get_nested_tensor_impl(tensor)->get_unsafe_storage_as_tensor()};
  }
  const SparseCsrTensorImpl* impl = compressed_impl(tensor);
  return {impl->compressed_indices(), impl->plain_indices(), impl->values()};
}

size_t own_member_references(const at::Tensor& tensor) {
  return is_nested_impl(tensor) ? 1 : 0;
}

c10::DispatchKey cpu_kernel_key(const at::Tensor& tensor) {
  if (tensor.layout() == c10::kSparse) {
    return c10::DispatchKey::SparseCPU;
  }
  return is_nested_impl(tensor) ? c10::DispatchKey::NestedTensorCPU
                                : c10::DispatchKey::SparseCsrCPU;
}

// DOC START: tensor-over-members
at::Tensor tensor_over_members(const at::Tensor& like, c10::ArrayRef<at::Tensor> members,
                               c10::Device device) {
  // The constructors give a fresh tensor empty members on the current device.
  c10::OptionalDeviceGuard guard;
  if (!device.is_cpu()) {
    guard.reset_device(device);
  }
  const bool on_cpu = device.is_cpu();
  if (is_nested_impl(like)) {
    const NestedTensorImpl* source = get_nested_tensor_impl(like);
    // As PyTorch's nested tensors, with autograd's nested key (the alias needs none: the
    // fallback calls its CPU kernel below autograd).
    const c10::DispatchKeySet keys = on_cpu
        ? c10::DispatchKeySet(c10::DispatchKey::NestedTensorCPU)
        : c10::DispatchKeySet({c10::DispatchKey::NestedTensorPrivateUse1,
                               c10::DispatchKey::AutogradNestedTensor});
    return at::detail::make_tensor<NestedTensorImpl>(
        members[0].storage(), keys, like.dtype(), source->get_nested_sizes(),
        source->get_nested_strides(), source->get_storage_offsets());
  }
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
  set_member_tensors_of(tensor, like, members);
  return tensor;
}
// DOC END: tensor-over-members

void set_member_tensors_of(const at::Tensor& tensor, const at::Tensor& like,
                           c10::ArrayRef<at::Tensor> members) {
  TORCH_INTERNAL_ASSERT(tensor.layout() == like.layout() &&
                        members.size() == member_tensors(like).size());
  if (is_nested_impl(like)) {
    // A nested tensor's storage never changes: kernels write its buffer in place.
    TORCH_INTERNAL_ASSERT(members[0].storage().is_alias_of(tensor.storage()),
                          "openreg: a kernel replaced a nested tensor's storage");
    return;
  }
  if (like.layout() == c10::kSparse) {
    SparseTensorImpl* impl = coo_impl(tensor);
    const SparseTensorImpl* source = coo_impl(like);
    if (impl->sparse_dim() != source->sparse_dim() || impl->dense_dim() != source->dense_dim() ||
        impl->sizes() != source->sizes()) {
      impl->raw_resize_(source->sparse_dim(), source->dense_dim(), source->sizes());
    }
    impl->set_indices_and_values_unsafe(members[0], members[1]);
    impl->set_coalesced(source->coalesced());
    return;
  }
  compressed_impl(tensor)->set_member_tensors(members[0], members[1], members[2], like.sizes());
}

} // namespace at::native::openreg
