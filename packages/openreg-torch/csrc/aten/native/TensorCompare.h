#pragma once

// clamp, clamp_min and clamp_max in the STUB lane (StructuredOnDevice.h): the calls
// their CPU impl() answers with a fill_ through the dispatcher instead of the STUB.

#include <ATen/core/Tensor.h>
#include <ATen/ops/clamp_max_native.h>
#include <ATen/ops/clamp_min_native.h>
#include <ATen/ops/clamp_native.h>

#include <cmath>
#include <optional>

#include "aten/native/StructuredOnDevice.h"

namespace at::native::openreg {

// A NaN bound: impl() fills the output with NaN (clamp with both bounds, clamp_min,
// clamp_max). A complex bound is not NaN here: meta() refuses it as on the CPU.
inline bool is_nan_bound(const at::Scalar& bound) {
  return bound.isFloatingPoint() && std::isnan(bound.toDouble());
}

template <>
struct LeavesToDirectKernel<at::native::structured_clamp_out> {
  static bool call(const at::Tensor& /*self*/, const std::optional<at::Scalar>& min,
                   const std::optional<at::Scalar>& max) {
    return min.has_value() && max.has_value() && (is_nan_bound(*min) || is_nan_bound(*max));
  }
};

// clamp_min(x, bound), clamp_max(x, bound).
struct NanBoundIsFilled {
  static bool call(const at::Tensor& /*self*/, const at::Scalar& bound) {
    return is_nan_bound(bound);
  }
};
template <>
struct LeavesToDirectKernel<at::native::structured_clamp_min_out> : NanBoundIsFilled {};
template <>
struct LeavesToDirectKernel<at::native::structured_clamp_max_out> : NanBoundIsFilled {};

} // namespace at::native::openreg
