#pragma once

// Sparse tensors (COO, CSR, CSC, BSR, BSC) own no storage: they hold dense member
// tensors (COO: indices, values; compressed: compressed indices, plain indices, values)
// and metadata (sizes, sparse and dense dimensions, layout, coalesced flag). An openreg
// sparse tensor's members are openreg tensors. A CPU kernel sees it as a CPU sparse
// tensor of the same metadata over its members' kernel-view aliases (no copy), and a
// CPU sparse result becomes an openreg sparse tensor over its members mapped to the
// device the way dense results are (DeviceCall).

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/Layout.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/SmallVector.h>

#include "runtime/OpenRegMacros.h"

namespace at::native::openreg {

// COO or one of the four compressed layouts.
OPENREG_TORCH_API bool is_sparse_layout(c10::Layout layout);

// A sparse tensor's members, in the fixed order above.
OPENREG_TORCH_API c10::SmallVector<at::Tensor, 3> sparse_members(const at::Tensor& sparse);

// A sparse tensor on `device` (CPU for kernel aliases, openreg for results) with the
// metadata of `like` over `members` (given in sparse_members' order, on `device`).
OPENREG_TORCH_API at::Tensor sparse_tensor_over(const at::Tensor& like,
                                                 c10::ArrayRef<at::Tensor> members,
                                                 c10::Device device);

// Gives `sparse` (in place) the metadata of `like` over `members`: a written sparse
// argument takes what the CPU kernel made of its alias.
OPENREG_TORCH_API void set_sparse_members(const at::Tensor& sparse, const at::Tensor& like,
                                           c10::ArrayRef<at::Tensor> members);

} // namespace at::native::openreg
