#pragma once

// floor, ceil, trunc and round in the STUB lane (StructuredOnDevice.h): for an integer
// tensor their CPU impl() copies the input through the dispatcher instead of calling the
// STUB (PyTorch's CREATE_UNARY_TORCH_IMPL_INTEGER_NO_OP_FUNC), so such calls take the
// direct kernel.

#include <ATen/core/Tensor.h>
#include <ATen/ops/ceil_native.h>
#include <ATen/ops/floor_native.h>
#include <ATen/ops/round_native.h>
#include <ATen/ops/trunc_native.h>

#include "aten/native/StructuredOnDevice.h"

namespace at::native::openreg {

struct IntegerInputIsCopied {
  static bool call(const at::Tensor& self) {
    return c10::isIntegralType(self.scalar_type(), /*includeBool=*/false);
  }
};

template <>
struct LeavesToDirectKernel<at::native::structured_floor_out> : IntegerInputIsCopied {};
template <>
struct LeavesToDirectKernel<at::native::structured_ceil_out> : IntegerInputIsCopied {};
template <>
struct LeavesToDirectKernel<at::native::structured_trunc_out> : IntegerInputIsCopied {};
template <>
struct LeavesToDirectKernel<at::native::structured_round_out> : IntegerInputIsCopied {};

} // namespace at::native::openreg
