// Which operators get a direct kernel: those a training step calls most (elementwise
// arithmetic, matrix products, activations and their backward, losses, normalisation,
// optimizer updates). Everything else keeps the boxed zero-copy fallback; the results
// are the same, only the per-call overhead differs (see benchmarks/).

// The CPU entries of PyTorch's STUBs are chosen by CPU capability at run time, from the
// variants its x86 wheels are built with (AVX512, AVX2, default): calling a STUB names
// them, so this file declares the same set. A wheel built with another set lacks these
// symbols and openreg-torch then fails to load, loudly.
#define HAVE_AVX512_CPU_DEFINITION
#define HAVE_AVX2_CPU_DEFINITION

#include <ATen/Operators.h>
#include <ATen/native/BinaryOps.h>
#include <ATen/ops/add_native.h>
#include <ATen/ops/div_native.h>
#include <ATen/ops/mul_native.h>
#include <ATen/ops/sub_native.h>
#include <torch/library.h>

#include "aten/DirectKernels.h"
#include "aten/OperatorRoutes.h"
#include "aten/native/StructuredOnDevice.h"
#include "execution/RunOnDevice.h"

namespace at::openreg {
namespace {

// "add.Tensor" for at::_ops::add_Tensor.
template <typename Op>
std::string qualified_name() {
  const std::string name = std::string(Op::name).substr(6);  // drop "aten::"
  const std::string overload = Op::overload_name;
  return overload.empty() ? name : name + "." + overload;
}

template <typename Op>
void impl(torch::Library& library) {
  library.impl(qualified_name<Op>().c_str(),
               TORCH_FN(at::native::openreg::DirectKernel<Op>::call));
  note_route("aten::" + qualified_name<Op>(), Route::DirectKernel);
}

// An operator with PyTorch's structured kernel takes the lean lane (StructuredOnDevice.h).
template <typename Op, typename CpuStructured>
void impl_structured(torch::Library& library) {
  library.impl(qualified_name<Op>().c_str(),
               TORCH_FN((at::native::openreg::StructuredOnDevice<Op, CpuStructured>::call)));
  note_route("aten::" + qualified_name<Op>(), Route::DirectKernel);
}

// DOC START: structured-kernel-list
size_t register_structured_ops(torch::Library& library) {
  namespace ops = at::_ops;
  using at::native::structured_div_out;
  using at::native::structured_mul_out;
  using at::native::structured_sub_out;
  using at::native::structured_ufunc_add_CPU;
  impl_structured<ops::add_Tensor, structured_ufunc_add_CPU>(library);
  impl_structured<ops::add__Tensor, structured_ufunc_add_CPU>(library);
  impl_structured<ops::sub_Tensor, structured_sub_out>(library);
  impl_structured<ops::sub__Tensor, structured_sub_out>(library);
  impl_structured<ops::mul_Tensor, structured_mul_out>(library);
  impl_structured<ops::mul__Tensor, structured_mul_out>(library);
  impl_structured<ops::div_Tensor, structured_div_out>(library);
  impl_structured<ops::div__Tensor, structured_div_out>(library);
  return 8;
}
// DOC END: structured-kernel-list

// DOC START: direct-kernel-list
template <typename... Ops>
size_t impl_all(torch::Library& library) {
  (impl<Ops>(library), ...);
  return sizeof...(Ops);
}

size_t register_hot_ops(torch::Library& library) {
  namespace ops = at::_ops;
  return impl_all<
      // arithmetic, functional and in place
      ops::neg, ops::exp, ops::log, ops::sqrt, ops::rsqrt, ops::pow_Tensor_Scalar,
      ops::maximum, ops::clamp_min, ops::where_self, ops::eq_Scalar,
      ops::fill__Scalar, ops::zero_, ops::masked_fill__Scalar,
      // reductions and matrix products
      ops::sum_dim_IntList, ops::mean_dim, ops::amax, ops::addmm, ops::mm, ops::bmm,
      ops::baddbmm, ops::index_select,
      // activations, losses, normalisation, and their backward
      ops::relu, ops::relu_, ops::threshold_backward, ops::gelu, ops::gelu_backward,
      ops::silu, ops::silu_backward, ops::tanh, ops::tanh_backward, ops::sigmoid,
      ops::sigmoid_backward, ops::_softmax, ops::_softmax_backward_data, ops::_log_softmax,
      ops::_log_softmax_backward_data, ops::nll_loss_forward, ops::nll_loss_backward,
      ops::native_layer_norm, ops::native_layer_norm_backward,
      // optimizer updates
      ops::addcmul_, ops::addcdiv_, ops::lerp__Scalar, ops::lerp__Tensor>(library);
}
// DOC END: direct-kernel-list

} // namespace

size_t register_direct_kernels(torch::Library& library) {
  return register_structured_ops(library) + register_hot_ops(library);
}

} // namespace at::openreg

// DOC START: structured-kernel-stubs
// The STUBs the structured kernels above call: their CPU entries, on the kernel view.
namespace at::native {
namespace {
template <typename Stub, Stub& stub>
constexpr auto on_kernel_view = &openreg::CpuStubOnKernelView<Stub, stub>::run;
} // namespace

// sub's structured kernel calls add_stub with -alpha (the CPU has no sub_stub entry).
REGISTER_PRIVATEUSE1_DISPATCH(add_stub, (on_kernel_view<decltype(add_stub), add_stub>))
REGISTER_PRIVATEUSE1_DISPATCH(mul_stub, (on_kernel_view<decltype(mul_stub), mul_stub>))
REGISTER_PRIVATEUSE1_DISPATCH(div_true_stub,
                              (on_kernel_view<decltype(div_true_stub), div_true_stub>))
} // namespace at::native
// DOC END: structured-kernel-stubs
