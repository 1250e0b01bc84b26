// Registration of the openreg kernels with the dispatcher. Kernels live in native/;
// this file only says which kernel serves which operator.

#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <torch/library.h>

#include "aten/native/Attention.h"
#include "aten/native/Convolution.h"
#include "aten/native/Copy.h"
#include "aten/native/Fallback.h"
#include "aten/native/Minimal.h"
#include "aten/native/Random.h"
#include "aten/native/ShallowCopy.h"

namespace at::openreg {

namespace native = at::native::openreg;

// DOC START: register-minimal
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(native::empty_memory_format));
  m.impl("empty_strided", TORCH_FN(native::empty_strided));
  m.impl("as_strided", TORCH_FN(native::as_strided));
  m.impl("view", TORCH_FN(native::view));
  m.impl("_reshape_alias", TORCH_FN(native::_reshape_alias));
  m.impl("resize_", TORCH_FN(native::resize_));
  m.impl("_copy_from", TORCH_FN(native::_copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(native::_copy_from_and_resize));
  m.impl("_local_scalar_dense", TORCH_FN(native::_local_scalar_dense));
  m.impl("set_.source_Tensor", TORCH_FN(native::set_source_Tensor));
  m.impl("set_.source_Storage", TORCH_FN(native::set_source_Storage));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(native::set_source_Storage_storage_offset));
  // Beyond the seed's table: CPU's versions would use the CPU allocator.
  m.impl("set_", TORCH_FN(native::set_empty));
  m.impl("record_stream", TORCH_FN(native::record_stream));
  m.impl("native_dropout", TORCH_FN(native::native_dropout));
  // PrivateUse1's own entry points for convolutions (they never reach the fallback).
  m.impl("convolution_overrideable", TORCH_FN(native::convolution_overrideable));
  m.impl("convolution_backward_overrideable",
         TORCH_FN(native::convolution_backward_overrideable));
  // Attention's choice of implementation, asked as an operator (the stub is below);
  // through the fallback it would see aliases that drop requires_grad.
  m.impl("_fused_sdp_choice", TORCH_FN(native::fused_sdp_choice));
  // param.data = openreg_tensor and Module.to("openreg") move tensors in place.
  m.impl("_has_compatible_shallow_copy_type",
         TORCH_FN(native::_has_compatible_shallow_copy_type));
}
// DOC END: register-minimal

// DOC START: register-fallback
TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&native::openreg_fallback>());
}
// DOC END: register-fallback


} // namespace at::openreg

namespace at::native {
// DOC START: register-sdp-choice
// scaled_dot_product_attention asks this stub; unfilled, openreg would always take the
// math path and differ from the CPU's results.
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &at::native::openreg::fused_sdp_choice);
// DOC END: register-sdp-choice
} // namespace at::native

namespace at::openreg {

// The copy kernels read conjugate/negative bits themselves (they carry them onto the
// kernel views). Going through the Conjugate/Negative fallbacks instead would
// materialise the source with another copy_, which calls _copy_from again: endless.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

} // namespace at::openreg
