#include "aten/native/SummaryOps.h"

#include <ATen/Operators.h>

#include "execution/RunOnDevice.h"

namespace at::native::openreg {

// DOC START: histc
at::Tensor histc(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                 const at::Scalar& max) {
  if (c10::isIntegralType(self.scalar_type(), /*includeBool=*/false)) {
    // CUDA takes the bounds as integers (truncated: 0.5..9.5 bins 0..9) and bins an
    // integer element at (x - min) * bins / (max - min) in integer arithmetic, which is
    // where double arithmetic puts it too (exactly, for values below 2^53); its counts
    // have the input's dtype.
    const at::Scalar low(min.to<int64_t>());
    const at::Scalar high(max.to<int64_t>());
    return openreg::histc(self.to(at::kDouble), bins, low, high).to(self.scalar_type());
  }
  return DirectKernel<at::_ops::histc>::call(self, bins, min, max);
}
// DOC END: histc

} // namespace at::native::openreg
