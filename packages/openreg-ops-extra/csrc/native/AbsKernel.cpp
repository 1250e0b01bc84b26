#include "native/AbsKernel.h"

#include <ATen/Dispatch_v2.h>
#include <ATen/OpMathType.h>
#include <c10/util/complex.h>

#include <atomic>
#include <cmath>
#include <type_traits>

#include <openreg_torch/execution/DeviceLoops.h>

namespace at::native::openreg_extra {
namespace {

std::atomic<int64_t> calls{0};

// DOC START: abs-value
// |a| for every dtype CPU abs supports. Reduced-precision floats compute in their op-math
// type (float) and round back, which is exact for abs; complex gives |z| + 0i.
template <typename scalar_t>
scalar_t abs_value(scalar_t a) {
  if constexpr (c10::is_complex<scalar_t>::value) {
    using opmath_t = at::opmath_type<scalar_t>;  // complex<float> for ComplexHalf
    using real_t = decltype(a.real());
    return scalar_t(static_cast<real_t>(std::abs(static_cast<opmath_t>(a))), real_t(0));
  } else if constexpr (std::is_unsigned_v<scalar_t>) {
    return a;
  } else if constexpr (std::is_integral_v<scalar_t>) {
    // Negated in unsigned arithmetic: the most negative value wraps to itself, as on CPU,
    // without signed overflow.
    using unsigned_t = std::make_unsigned_t<scalar_t>;
    return a < 0 ? static_cast<scalar_t>(unsigned_t(0) - static_cast<unsigned_t>(a)) : a;
  } else {
    using opmath_t = at::opmath_type<scalar_t>;
    return static_cast<scalar_t>(std::abs(static_cast<opmath_t>(a)));
  }
}
// DOC END: abs-value

} // namespace

// DOC START: stub-abs-kernel
void abs_kernel(TensorIteratorBase& iter) {
  calls.fetch_add(1, std::memory_order_relaxed);
  AT_DISPATCH_V2(iter.dtype(), "abs_openreg", AT_WRAP([&] {
    at::native::openreg::unary_device_kernel<scalar_t>(
        iter, "aten::abs", [](scalar_t a) { return abs_value(a); });
  }), AT_EXPAND(AT_ALL_TYPES), AT_EXPAND(AT_COMPLEX_TYPES), kComplexHalf, kHalf, kBFloat16,
      kFloat8_e5m2, kFloat8_e5m2fnuz, kFloat8_e4m3fn, kFloat8_e4m3fnuz);
}
// DOC END: stub-abs-kernel

int64_t abs_kernel_calls() {
  return calls.load(std::memory_order_relaxed);
}

} // namespace at::native::openreg_extra
