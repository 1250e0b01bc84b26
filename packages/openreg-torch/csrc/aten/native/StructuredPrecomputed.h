#pragma once

// Where impl() takes the values its meta() precomputed, for the structured kernels of the
// alias lane whose meta() returns some (StructuredOnAliases, StructuredOnDevice.h): the
// order is the one PyTorch's generated CPU registration uses (RegisterCPU.cpp).

#include <ATen/ops/cat_native.h>
#include <ATen/ops/max_native.h>
#include <ATen/ops/min_native.h>

#include <array>
#include <vector>

#include "aten/native/Shape.h"
#include "aten/native/StructuredOnDevice.h"

namespace at::native::openreg {

// cat(tensors, dim): dim wrapped, the index of the first tensor that is not a legacy
// empty one, and the fast paths' conditions.
template <>
struct ImplWithPrecomputed<at::native::structured_cat_out_cpu> {
  template <typename Op, typename Precomputed>
  static void impl(Op& op, const Precomputed& pre, const std::array<at::Tensor, 1>& outputs,
                   const std::vector<at::Tensor>& tensors, int64_t /*dim*/) {
    op.impl(at::ITensorListRef(tensors), pre.dim, pre.valid, pre.all_contiguous,
            pre.all_same_dtype, pre.all_same_sizes_and_stride, pre.memory_format, outputs[0]);
  }
};

template <>
struct CopyOnly<at::native::structured_cat_out_cpu> {
  template <typename Precomputed>
  static bool launch(c10::Device device, std::string_view name, const Precomputed& pre,
                     const at::Tensor& out, const at::ITensorListRef& tensors, int64_t /*dim*/) {
    return cat_by_copies(device, name, tensors, out, pre.dim, pre.all_contiguous,
                         pre.all_same_dtype, pre.memory_format);
  }
};

// max.dim / min.dim (self, dim, keepdim): dim wrapped; outputs values, indices.
struct ImplWithWrappedDim {
  template <typename Op, typename Precomputed>
  static void impl(Op& op, const Precomputed& pre, const std::array<at::Tensor, 2>& outputs,
                   const at::Tensor& self, int64_t /*dim*/, bool keepdim) {
    op.impl(self, pre.dim, keepdim, outputs[0], outputs[1]);
  }
};
template <>
struct ImplWithPrecomputed<at::native::structured_max_out>
    : ImplWithWrappedDim {};
template <>
struct ImplWithPrecomputed<at::native::structured_min_out>
    : ImplWithWrappedDim {};

} // namespace at::native::openreg
