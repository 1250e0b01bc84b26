// Every registration of openreg kernels with the dispatcher, in one translation unit so
// that their order is fixed here (statics of one file initialise top to bottom), not by
// the order in which Python imports things:
//   1. openreg's own kernels (factories, views, copies, convolution...);
//   2. direct kernels for the hottest operators (zero-copy mode);
//   3. the boxed fallback for every other operator;
//   4. last, composite operators whose CPU kernel serves better, routed to the fallback
//      (this reads which operators 1 and 2 already cover).
// Kernels live in native/ and execution/; this file only says which serves what.
// (Also here: the AOTInductor model runner for openreg packages, at the end.)
// (The openreg namespace is OpenRegLibrary.cpp; autocast lists OpenRegAutocast.cpp.)

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/_coalesced_native.h>
#include <ATen/ops/_dimI_native.h>
#include <ATen/ops/_dimV_native.h>
#include <ATen/ops/_indices_native.h>
#include <ATen/ops/_nested_tensor_size_native.h>
#include <ATen/ops/_nested_tensor_storage_offsets_native.h>
#include <ATen/ops/_nested_tensor_strides_native.h>
#include <ATen/ops/_nested_view_from_buffer_native.h>
#include <ATen/ops/_to_copy_native.h>
#include <ATen/ops/_nnz_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_native.h>
#include <ATen/ops/_values_native.h>
#include <ATen/ops/ccol_indices_native.h>
#include <ATen/ops/col_indices_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/copy_sparse_to_sparse_native.h>
#include <ATen/ops/crow_indices_native.h>
#include <ATen/ops/dense_dim_native.h>
#include <ATen/ops/empty_like_native.h>
#include <ATen/ops/empty_native.h>
#include <ATen/ops/indices_native.h>
#include <ATen/ops/is_coalesced_native.h>
#include <ATen/ops/resize_as_sparse_native.h>
#include <ATen/ops/row_indices_native.h>
#include <ATen/ops/sparse_dim_native.h>
#include <ATen/ops/sparse_resize_and_clear_native.h>
#include <ATen/ops/sparse_resize_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/values_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <torch/csrc/jit/serialization/pickler_helper.h>
#include <torch/library.h>

#include <memory>
#include <string>

#include "aten/DirectKernels.h"
#include "aten/OperatorRoutes.h"
#include "aten/OpenRegTensorMeta.h"
#include "aten/native/Attention.h"
#include "aten/native/Convolution.h"
#include "aten/native/Copy.h"
#include "aten/native/Fallback.h"
#include "aten/native/Minimal.h"
#include "aten/native/Normalization.h"
#include "aten/native/RNN.h"
#include "aten/native/Random.h"
#include "aten/native/ShallowCopy.h"
#include "aten/native/SparseTensor.h"
#include "aten/native/SummaryOps.h"
#include "distributed/Ops.h"
#include "inductor/OpenRegModelContainerRunner.h"

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
  own(m, "histc", TORCH_FN(native::histc));
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
  // A whole-sequence LSTM as the CPU runs it (oneDNN layers); also for autograd below.
  own(m, "lstm.input", TORCH_FN(native::lstm));
  // SyncBatchNorm's pieces (CUDA-only operators, Normalization.cu's twins).
  own(m, "batch_norm_stats", TORCH_FN(native::batch_norm_stats));
  own(m, "batch_norm_gather_stats", TORCH_FN(native::batch_norm_gather_stats));
  own(m, "batch_norm_gather_stats_with_counts",
      TORCH_FN(native::batch_norm_gather_stats_with_counts));
  own(m, "batch_norm_elemt", TORCH_FN(native::batch_norm_elemt));
  own(m, "batch_norm_backward_reduce", TORCH_FN(native::batch_norm_backward_reduce));
  own(m, "batch_norm_backward_elemt", TORCH_FN(native::batch_norm_backward_elemt));
  // A nested view of a dense buffer: its size, stride and offset tensors are CPU
  // metadata, which the fallback would reject next to an openreg buffer.
  own(m, "_nested_view_from_buffer",
      TORCH_FN(native::OnKernelDevice<&at::native::_nested_view_from_buffer>::call));
  // Views PyTorch computes from metadata alone (CPU, CUDA and Meta share the kernel): run
  // through a fallback they would come back as copies in the copy mode.
  own(m, "unfold", TORCH_FN(at::native::unfold));
  own(m, "view_as_real", TORCH_FN(at::native::view_as_real));
  own(m, "view_as_complex", TORCH_FN(at::native::view_as_complex));
  // param.data = openreg_tensor and Module.to("openreg") move tensors in place.
  own(m, "_has_compatible_shallow_copy_type",
      TORCH_FN(native::_has_compatible_shallow_copy_type));

  if (native::fallback_mode() == native::FallbackMode::ZeroCopy) {
    register_direct_kernels(m);
  }
}
// DOC END: register-minimal

// A composite operator decomposes above autograd: openreg's LSTM stands in for it there
// too, so that its layers record their own gradients (native/RNN.h).
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("lstm.input", TORCH_FN(native::lstm));
}

// DOC START: register-fallback
TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&native::openreg_fallback>());
}
// DOC END: register-fallback

// PyTorch's device-generic kernel `kernel`, under the device guard of its arguments.
#define OPENREG_GENERIC(kernel) TORCH_FN(native::OnKernelDevice<&at::native::kernel>::call)

// DOC START: register-sparse
// Sparse and nested tensors dispatch to their own keys. Their metadata operators (factories, member
// accessors, resizing, sparse-to-sparse copies) are PyTorch's device-generic kernels,
// the ones SparseCPU, SparseCUDA and SparseMeta share, under the device guard PyTorch's
// wrappers give them (native/SparseTensor.h): they only touch members, through openreg's
// dense operators. Every other sparse operator takes the fallback, which runs
// its CPU kernel on a CPU sparse alias over the members' kernel views, torch.distributed's
// collectives (c10d::*) excepted: as on CUDA, all_reduce has a sparse kernel of its own
// and the others have none (the fallback raises for them).
TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  m.impl("empty.memory_format", OPENREG_GENERIC(empty_sparse_symint));
  m.impl("empty_like", OPENREG_GENERIC(empty_like_sparse_coo));
  m.impl("_sparse_coo_tensor_with_dims", OPENREG_GENERIC(new_with_dims_sparse));
  m.impl("_sparse_coo_tensor_with_dims_and_tensors",
         OPENREG_GENERIC(new_with_dims_and_tensor_sparse_symint));
  m.impl("_indices", OPENREG_GENERIC(_indices_sparse));
  m.impl("_values", OPENREG_GENERIC(_values_sparse));
  m.impl("indices", OPENREG_GENERIC(indices_sparse));
  m.impl("values", OPENREG_GENERIC(values_sparse));
  m.impl("_nnz", OPENREG_GENERIC(_nnz_sparse));
  m.impl("sparse_dim", OPENREG_GENERIC(sparse_dim_sparse));
  m.impl("dense_dim", OPENREG_GENERIC(dense_dim_sparse));
  m.impl("_dimI", OPENREG_GENERIC(sparse_dim_sparse));
  m.impl("_dimV", OPENREG_GENERIC(dense_dim_sparse));
  m.impl("is_coalesced", OPENREG_GENERIC(is_coalesced_sparse));
  m.impl("_coalesced_", OPENREG_GENERIC(_coalesced_sparse_));
  m.impl("sparse_resize_", OPENREG_GENERIC(sparse_resize_));
  m.impl("sparse_resize_and_clear_", OPENREG_GENERIC(sparse_resize_and_clear_));
  m.impl("copy_sparse_to_sparse_", OPENREG_GENERIC(copy_sparse_));
  m.impl("copy_", OPENREG_GENERIC(copy_sparse_wrapper_));
}

TORCH_LIBRARY_IMPL(aten, SparseCsrPrivateUse1, m) {
  m.impl("empty.memory_format", OPENREG_GENERIC(empty_sparse_compressed_symint));
  m.impl("empty_like", OPENREG_GENERIC(empty_like_sparse_csr));
  m.impl("crow_indices", OPENREG_GENERIC(crow_indices_sparse_csr));
  m.impl("col_indices", OPENREG_GENERIC(col_indices_sparse_csr));
  m.impl("ccol_indices", OPENREG_GENERIC(ccol_indices_sparse_csr));
  m.impl("row_indices", OPENREG_GENERIC(row_indices_sparse_csr));
  m.impl("values", OPENREG_GENERIC(values_sparse_csr));
  m.impl("_nnz", OPENREG_GENERIC(_nnz_sparse_csr));
  m.impl("sparse_dim", OPENREG_GENERIC(sparse_dim_sparse_csr));
  m.impl("dense_dim", OPENREG_GENERIC(dense_dim_sparse_csr));
  m.impl("resize_as_sparse_", OPENREG_GENERIC(resize_as_sparse_compressed_));
  m.impl("copy_", OPENREG_GENERIC(copy_sparse_compressed_));
}

// Strided nested tensors (NestedTensorImpl) keep their per-component sizes, strides and
// offsets on the CPU, as on CUDA: these operators return them as they are.
TORCH_LIBRARY_IMPL(aten, NestedTensorPrivateUse1, m) {
  m.impl("_nested_tensor_size", OPENREG_GENERIC(_nested_tensor_size));
  m.impl("_nested_tensor_strides", OPENREG_GENERIC(_nested_tensor_strides));
  m.impl("_nested_tensor_storage_offsets", OPENREG_GENERIC(_nested_tensor_storage_offsets));
  // Moves between devices copy the buffer and keep the metadata, as CUDA's do; the empty
  // result may be on another device (through the fallback it would be put back on the
  // call's device).
  m.impl("_to_copy", OPENREG_GENERIC(_to_copy_nested));
  m.impl("empty_like", OPENREG_GENERIC(empty_like_nested));
}

TORCH_LIBRARY_IMPL(_, NestedTensorPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&native::openreg_fallback>());
}

// c10d registers allreduce_ for SparseCPU and SparseCUDA; this is the SparseCUDA one's
// twin: the group's openreg backend's allreduce_sparse.
TORCH_LIBRARY_IMPL(c10d, SparsePrivateUse1, m) {
  m.impl("allreduce_", TORCH_FN(c10d::openreg::allreduce_sparse_));
}

TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&native::sparse_fallback>());
}

TORCH_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&native::sparse_fallback>());
}
// DOC END: register-sparse

// Quantized tensors exist on the CPU only (DeviceCall refuses quantized results too).
TORCH_LIBRARY_IMPL(_, QuantizedPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&native::quantized_fallback>());
}

// DOC START: register-backend-meta
// torch.save / torch.load carry an openreg tensor's backend metadata (its layout tag)
// in the tensor's metadata dictionary.
const bool backend_meta_serialization = [] {
  torch::jit::TensorBackendMetaRegistry(c10::DeviceType::PrivateUse1,
                                        &native::save_backend_meta, &native::load_backend_meta);
  return true;
}();
// DOC END: register-backend-meta

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
//     _stack...): the composite is a decomposition, not the CPU's numerics; the same for
//     the two CompositeImplicitAutograd ones with a CPU kernel (mish_backward: Mish's
//     gradients differed from the CPU's in the last bit; native_channel_shuffle), whose
//     own derivatives (mish's) already choose between kernel and composite;
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
    const bool implicit_composite =
        op->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd);
    const bool foreach = name.name.rfind("aten::_foreach_", 0) == 0;
    // mode.values: its composite rejects devices other than CPU, CUDA and XPU.
    const bool device_checking_composite = name.name == "aten::mode" &&
                                           name.overload_name == "values";
    // The CPU's own kernel instead of the composite; foreach lists in one call.
    const bool cpu_instead = (composite && (cpu_kernel || device_checking_composite)) ||
                             (implicit_composite && cpu_kernel);
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

// DOC START: route-sparse-composite
// The same for sparse and nested tensors: PyTorch's composites (e.g. the structured sin,
// add, sum) would allocate strided outputs for them; where SparseCPU, SparseCsrCPU or
// NestedTensorCPU has a kernel of its own, openreg's take it through the fallback.
std::unique_ptr<torch::Library> route_sparse_composite_ops_to_fallback(
    c10::DispatchKey openreg_key, c10::DispatchKey cpu_key) {
  if (native::fallback_mode() == native::FallbackMode::Selective) {
    return nullptr;
  }
  auto library = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", openreg_key,
                                                  __FILE__, __LINE__);
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
    const auto op = dispatcher.findOp(name);
    if (!op.has_value() || name.name.rfind("aten::", 0) != 0 ||
        op->hasKernelForDispatchKey(openreg_key) || !op->hasKernelForDispatchKey(cpu_key)) {
      continue;
    }
    // Nested tensors have an autograd key of their own (AutogradNestedTensor), so even a
    // CompositeImplicitAutograd operator (matmul) reaches the backend undecomposed.
    const bool implicit = openreg_key == c10::DispatchKey::NestedTensorPrivateUse1 &&
                          op->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd);
    if (!implicit &&
        !op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional) &&
        !op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd)) {
      continue;
    }
    const std::string qualified = name.overload_name.empty()
        ? name.name : name.name + "." + name.overload_name;
    library->impl(qualified.c_str(),
                  torch::CppFunction::makeFromBoxedFunction<&native::openreg_fallback>());
  }
  return library;
}
// DOC END: route-sparse-composite

// Last: after every kernel registered above in this file.
const std::unique_ptr<torch::Library> composite_routes = route_composite_ops_to_fallback();
const std::unique_ptr<torch::Library> sparse_composite_routes =
    route_sparse_composite_ops_to_fallback(c10::DispatchKey::SparsePrivateUse1,
                                           c10::DispatchKey::SparseCPU);
const std::unique_ptr<torch::Library> compressed_composite_routes =
    route_sparse_composite_ops_to_fallback(c10::DispatchKey::SparseCsrPrivateUse1,
                                           c10::DispatchKey::SparseCsrCPU);
const std::unique_ptr<torch::Library> nested_composite_routes =
    route_sparse_composite_ops_to_fallback(c10::DispatchKey::NestedTensorPrivateUse1,
                                           c10::DispatchKey::NestedTensorCPU);

} // namespace

} // namespace at::openreg

namespace at::native {
// DOC START: register-sdp-choice
// scaled_dot_product_attention asks this stub; unfilled, openreg would always take the
// math path and differ from the CPU's results.
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &at::native::openreg::fused_sdp_choice);
// DOC END: register-sdp-choice
} // namespace at::native

namespace at::openreg {
namespace {
// DOC START: register-aoti-runner
// AOTInductor: aoti_load_package runs a package compiled for openreg with openreg's runner.
const torch::inductor::RegisterAOTIModelRunner aoti_model_runner(
    "openreg", &at::native::openreg::create_openreg_model_runner);
// DOC END: register-aoti-runner
} // namespace
} // namespace at::openreg
