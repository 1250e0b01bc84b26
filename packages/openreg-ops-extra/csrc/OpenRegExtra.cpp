// Registration of openreg_ops_extra's kernels with the dispatcher. Kernels live in
// native/; this file only says which kernel serves which operator.

#include <ATen/native/DispatchStub.h>
#include <ATen/native/UnaryOps.h>
#include <ATen/ops/abs_native.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
#include <torch/library.h>

#include "native/AbsKernel.h"
#include "native/CustomOps.h"

namespace at::native {
// DOC START: stub-abs-registration
REGISTER_PRIVATEUSE1_DISPATCH(abs_stub, &at::native::openreg_extra::abs_kernel);
// DOC END: stub-abs-registration
} // namespace at::native

namespace at::openreg_extra {

namespace native = at::native::openreg_extra;

// DOC START: abs-out-route
// abs and abs_ are CompositeExplicitAutograd and both end in abs.out, whose CPU and CUDA
// kernel is at::native::abs_out: it builds a TensorIterator and calls
// abs_stub(iter.device_type(), iter). Without a PrivateUse1 kernel, abs.out would go to
// the boxed fallback; with the same kernel as CUDA, it reaches the stub registered above.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("abs.out", TORCH_FN(at::native::abs_out));
}
// DOC END: abs-out-route

// DOC START: custom-op-schema
// The namespace itself is openreg-torch's TORCH_LIBRARY(openreg, m); packages add to it.
TORCH_LIBRARY_FRAGMENT(openreg, m) {
  m.def("custom_abs(Tensor input) -> Tensor");
  m.def("custom_square(Tensor input) -> Tensor");
}
// DOC END: custom-op-schema

// DOC START: custom-op-kernels
TORCH_LIBRARY_IMPL(openreg, PrivateUse1, m) {
  m.impl("custom_abs", TORCH_FN(native::custom_abs));
  m.impl("custom_square", TORCH_FN(native::custom_square));
}
// DOC END: custom-op-kernels

// DOC START: custom-abs-autograd-fallback
// custom_abs is forward only. Autograd is always in the way (AutogradPrivateUse1 comes
// before PrivateUse1), so it gets PyTorch's autograd fallback: the forward runs even
// with grad mode on and inputs requiring grad; a backward through it raises.
TORCH_LIBRARY_IMPL(openreg, AutogradPrivateUse1, m) {
  m.impl("custom_abs", torch::autograd::autogradNotImplementedFallback());
}
// DOC END: custom-abs-autograd-fallback

// DOC START: custom-square-autograd
// custom_square: forward and backward registered separately, the backward being a C++
// torch::autograd::Function (native/CustomOps.cpp).
TORCH_LIBRARY_IMPL(openreg, AutogradPrivateUse1, m) {
  m.impl("custom_square", TORCH_FN(native::custom_square_autograd));
}
// DOC END: custom-square-autograd

} // namespace at::openreg_extra
