// Every registration of openreg kernels with the dispatcher, in one translation unit so
// that their order is fixed here (statics of one file initialise top to bottom), not by
// the order in which Python imports things:
//   1. openreg's own kernels (factories, views, copies, convolution...);
//   2. direct kernels for the hottest operators (zero-copy mode);
//   3. the boxed fallback for every other operator;
//   4. last, composite operators whose CPU kernel serves better, routed to the fallback
//      (this reads which operators 1 and 2 already cover).
// Kernels live in native/ and execution/; this file only says which serves what.
// (The openreg namespace is OpenRegLibrary.cpp; autocast lists OpenRegAutocast.cpp.)

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <torch/library.h>

#include <memory>
#include <string>

#include "aten/DirectKernels.h"
#include "aten/OperatorRoutes.h"
#include "aten/native/Attention.h"
#include "aten/native/Convolution.h"
#include "aten/native/Copy.h"
#include "aten/native/Fallback.h"
#include "aten/native/Minimal.h"
#include "aten/native/RNN.h"
#include "aten/native/Random.h"
#include "aten/native/ShallowCopy.h"

namespace at::openreg {
namespace {

namespace native = at::native::openreg;

// m.impl of an openreg kernel of its own, remembered for route_of().
template <typename Kernel>
void own(torch::Library& m, const char* name, Kernel&& kernel) {
  m.impl(name, std::forward<Kernel>(kernel));
  note_route(std::string("aten::") + name, Route::OwnKernel);
}

} // namespace

// DOC START: register-minimal
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  own(m, "empty.memory_format", TORCH_FN(native::empty_memory_format));
  own(m, "empty_strided", TORCH_FN(native::empty_strided));
  own(m, "as_strided", TORCH_FN(native::as_strided));
  own(m, "view", TORCH_FN(native::view));
  own(m, "_reshape_alias", TORCH_FN(native::_reshape_alias));
  own(m, "resize_", TORCH_FN(native::resize_));
  own(m, "_copy_from", TORCH_FN(native::_copy_from));
  own(m, "_copy_from_and_resize", TORCH_FN(native::_copy_from_and_resize));
  own(m, "_local_scalar_dense", TORCH_FN(native::_local_scalar_dense));
  own(m, "set_.source_Tensor", TORCH_FN(native::set_source_Tensor));
  own(m, "set_.source_Storage", TORCH_FN(native::set_source_Storage));
  own(m, "set_.source_Storage_storage_offset",
      TORCH_FN(native::set_source_Storage_storage_offset));
  // Beyond the seed's table: CPU's versions would use the CPU allocator.
  own(m, "set_", TORCH_FN(native::set_empty));
  own(m, "record_stream", TORCH_FN(native::record_stream));
  own(m, "native_dropout", TORCH_FN(native::native_dropout));
  // PrivateUse1's own entry points for convolutions (they never reach the fallback).
  own(m, "convolution_overrideable", TORCH_FN(native::convolution_overrideable));
  own(m, "convolution_backward_overrideable",
      TORCH_FN(native::convolution_backward_overrideable));
  // Attention's choice of implementation, asked as an operator (the stub is below);
  // through the fallback it would see aliases that drop requires_grad.
  own(m, "_fused_sdp_choice", TORCH_FN(native::fused_sdp_choice));
  // PrivateUse1's own entry points for attention (SDPBackend.OVERRIDEABLE): the CPU's
  // fused attention on device memory.
  own(m, "_scaled_dot_product_fused_attention_overrideable",
      TORCH_FN(native::scaled_dot_product_fused_attention_overrideable));
  own(m, "_scaled_dot_product_fused_attention_overrideable_backward",
      TORCH_FN(native::scaled_dot_product_fused_attention_overrideable_backward));
  // The fused RNN cells ATen calls for PrivateUse1 inputs (CUDA-only operators: the
  // CPU has no kernel for the fallback to run).
  own(m, "_thnn_fused_lstm_cell", TORCH_FN(native::thnn_fused_lstm_cell));
  own(m, "_thnn_fused_lstm_cell_backward_impl",
      TORCH_FN(native::thnn_fused_lstm_cell_backward_impl));
  own(m, "_thnn_fused_gru_cell", TORCH_FN(native::thnn_fused_gru_cell));
  own(m, "_thnn_fused_gru_cell_backward", TORCH_FN(native::thnn_fused_gru_cell_backward));
  // param.data = openreg_tensor and Module.to("openreg") move tensors in place.
  own(m, "_has_compatible_shallow_copy_type",
      TORCH_FN(native::_has_compatible_shallow_copy_type));

  if (native::fallback_mode() == native::FallbackMode::ZeroCopy) {
    register_direct_kernels(m);
  }
}
// DOC END: register-minimal

// DOC START: register-fallback
TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&native::openreg_fallback>());
}
// DOC END: register-fallback

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

namespace {

// DOC START: route-composite
// PyTorch serves some operators on PrivateUse1 with a composite kernel although the CPU
// has its own; running the CPU kernel through the fallback is faster or more exact:
//   - structured operators (exp, add, sum...): the composite computes the output's
//     metadata, allocates it, then calls the out= variant (which falls back); the CPU's
//     functional and in-place kernels build their iterator once, not twice;
//   - CompositeExplicitAutograd operators with a CPU kernel (native_layer_norm, addr,
//     _stack...): the composite is a decomposition, not the CPU's numerics;
//   - foreach operators: one call for the whole list instead of one per tensor.
// Registers the fallback per operator for every such aten operator that no kernel
// above serves (not in selective mode, where nothing may fall back unless allowed).
std::unique_ptr<torch::Library> route_composite_ops_to_fallback() {
  if (native::fallback_mode() == native::FallbackMode::Selective) {
    return nullptr;
  }
  auto library = std::make_unique<torch::Library>(
      torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
    const auto op = dispatcher.findOp(name);
    if (!op.has_value() || name.name.rfind("aten::", 0) != 0 ||
        op->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1)) {
      continue;
    }
    const bool cpu_kernel = op->hasKernelForDispatchKey(c10::DispatchKey::CPU);
    const bool composite =
        op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional) ||
        op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd);
    const bool foreach = name.name.rfind("aten::_foreach_", 0) == 0;
    // mode.values: its composite rejects devices other than CPU, CUDA and XPU.
    const bool device_checking_composite = name.name == "aten::mode" &&
                                           name.overload_name == "values";
    // The CPU's own kernel instead of the composite; foreach lists in one call.
    const bool cpu_instead = composite && (cpu_kernel || device_checking_composite);
    const bool whole_list = composite && foreach && !cpu_kernel;
    if (!cpu_instead && !whole_list) {
      continue;
    }
    const std::string qualified = name.overload_name.empty()
        ? name.name : name.name + "." + name.overload_name;
    library->impl(qualified.c_str(),
                  whole_list ? torch::CppFunction::makeFromBoxedFunction<&native::foreach_fallback>()
                             : torch::CppFunction::makeFromBoxedFunction<&native::openreg_fallback>());
    note_route(qualified, Route::Fallback);
  }
  return library;
}
// DOC END: route-composite

// Last: after every kernel registered above in this file.
const std::unique_ptr<torch::Library> composite_routes = route_composite_ops_to_fallback();

} // namespace

} // namespace at::openreg

namespace at::native {
// DOC START: register-sdp-choice
// scaled_dot_product_attention asks this stub; unfilled, openreg would always take the
// math path and differ from the CPU's results.
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &at::native::openreg::fused_sdp_choice);
// DOC END: register-sdp-choice
} // namespace at::native
