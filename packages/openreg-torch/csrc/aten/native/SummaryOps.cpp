#include "aten/native/SummaryOps.h"

#include <ATen/Operators.h>

#include "execution/RunOnDevice.h"

namespace at::native::openreg {

// DOC START: histc
at::Tensor histc(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                 const at::Scalar& max) {
  if (c10::isIntegralType(self.scalar_type(), /*includeBool=*/false)) {
    // CUDA bins an integer element at (x - min) * bins / (max - min) in integer
    // arithmetic, which is where double arithmetic puts it too (exactly, for values
    // below 2^53); its counts have the input's dtype.
    return openreg::histc(self.to(at::kDouble), bins, min, max).to(self.scalar_type());
  }
  return DirectKernel<at::_ops::histc>::call(self, bins, min, max);
}
// DOC END: histc

} // namespace at::native::openreg
