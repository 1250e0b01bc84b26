#pragma once

// pow(tensor, number) in the STUB lane (StructuredOnDevice.h): the exponents its CPU
// impl() answers with a fill_ (0) or a copy_ (1) through the dispatcher.

#include <ATen/core/Tensor.h>
#include <ATen/ops/pow_native.h>

#include "aten/native/StructuredOnDevice.h"

namespace at::native::openreg {

template <>
struct LeavesToDirectKernel<at::native::structured_pow_Tensor_Scalar_out> {
  static bool call(const at::Tensor& /*self*/, const at::Scalar& exponent) {
    return exponent.equal(0.0) || exponent.equal(false) || exponent.equal(1.0) ||
           exponent.equal(true);
  }
};

} // namespace at::native::openreg
