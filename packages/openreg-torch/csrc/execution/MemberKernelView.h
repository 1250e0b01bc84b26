#pragma once

// Tensors that own no storage of their own but hold dense member tensors:
//   - sparse tensors (COO, CSR, CSC, BSR, BSC): COO indices and values; compressed
//     indices, plain indices and values; plus sizes, sparse/dense dims, layout and the
//     coalesced flag;
//   - strided nested tensors (NestedTensorImpl): one buffer over their storage, plus
//     their per-component sizes, strides and offsets, which live on the CPU.
// An openreg one's members are openreg tensors. A CPU kernel sees it as the CPU tensor
// of the same kind and metadata over its members' kernel-view aliases (no copy), and a
// CPU result of that kind becomes an openreg one over its members mapped to the device
// the way dense results are (DeviceCall).

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/DispatchKey.h>
#include <c10/core/Layout.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/SmallVector.h>

#include "runtime/OpenRegMacros.h"

namespace at::native::openreg {

// COO or one of the four compressed layouts.
OPENREG_TORCH_API bool is_sparse_layout(c10::Layout layout);
// A sparse or a strided nested tensor.
OPENREG_TORCH_API bool has_members_by_layout(const at::Tensor& tensor);
// The same, inline: every operand is asked, and a dense one is told apart by its
// dispatch keys alone (sparse layouts and nested tensors carry these keys).
inline bool has_members(const at::Tensor& tensor) {
  static constexpr c10::DispatchKeySet member_keys =
      c10::DispatchKeySet(c10::DispatchKey::Sparse) |
      c10::DispatchKeySet(c10::DispatchKey::SparseCsr) |
      c10::DispatchKeySet(c10::DispatchKey::NestedTensor);
  return tensor.key_set().has_any(member_keys) && has_members_by_layout(tensor);
}

// Its members, in the fixed order above.
OPENREG_TORCH_API c10::SmallVector<at::Tensor, 3> member_tensors(const at::Tensor& tensor);

// How many references to the storage of a fresh CPU result's members the result itself
// holds besides the member tensors: a nested tensor holds its storage directly.
size_t own_member_references(const at::Tensor& tensor);

// The CPU dispatch key of its kind: SparseCPU, SparseCsrCPU or NestedTensorCPU.
c10::DispatchKey cpu_kernel_key(const at::Tensor& tensor);

// A tensor of `like`'s kind on `device` (CPU for kernel aliases, openreg for results)
// with the metadata of `like` over `members` (in member_tensors' order, on `device`).
OPENREG_TORCH_API at::Tensor tensor_over_members(const at::Tensor& like,
                                                 c10::ArrayRef<at::Tensor> members,
                                                 c10::Device device);

// Gives `tensor` (in place) the metadata of `like` over `members`: a written argument
// takes what the CPU kernel made of its alias.
OPENREG_TORCH_API void set_member_tensors_of(const at::Tensor& tensor, const at::Tensor& like,
                                             c10::ArrayRef<at::Tensor> members);

} // namespace at::native::openreg
