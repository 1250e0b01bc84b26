#pragma once

// Activations whose CPU kernel is another operator's structured kernel, in the shape the
// lean lane (StructuredOnDevice.h) runs: meta() and impl() of the operator's own
// arguments.

#include <ATen/core/Tensor.h>
#include <ATen/ops/clamp_min_native.h>

namespace at::native::openreg {

// DOC START: relu-on-device
// relu(x) is clamp_min(x, 0) on the CPU (at::native::relu, after refusing bool):
// clamp_min's structured kernel with a bound of 0, which never takes clamp_min's NaN
// branch (a fill_ through the dispatcher, device work a running kernel must not issue).
class ReluAsClampMin : public at::native::structured_clamp_min_out {
 public:
  void meta(const at::Tensor& self) {
    TORCH_CHECK(self.scalar_type() != at::kBool, "Boolean inputs not supported for relu");
    structured_clamp_min_out::meta(self, 0);
  }
  void impl(const at::Tensor& self, const at::Tensor& result) {
    structured_clamp_min_out::impl(self, 0, result);
  }
};
// DOC END: relu-on-device

} // namespace at::native::openreg
