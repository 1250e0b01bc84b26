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
#include <ATen/native/Activation.h>
#include <ATen/native/BinaryOps.h>
#include <ATen/native/Lerp.h>
#include <ATen/native/PointwiseOps.h>
#include <ATen/native/UnaryOps.h>
#include <ATen/ops/add_native.h>
#include <ATen/ops/addcdiv_native.h>
#include <ATen/ops/addcmul_native.h>
#include <ATen/ops/div_native.h>
#include <ATen/ops/exp_native.h>
#include <ATen/ops/lerp_native.h>
#include <ATen/ops/log_native.h>
#include <ATen/ops/maximum_native.h>
#include <ATen/ops/mul_native.h>
#include <ATen/ops/neg_native.h>
#include <ATen/ops/rsqrt_native.h>
#include <ATen/ops/sigmoid_backward_native.h>
#include <ATen/ops/sigmoid_native.h>
#include <ATen/ops/silu_backward_native.h>
#include <ATen/ops/silu_native.h>
#include <ATen/ops/sqrt_native.h>
#include <ATen/ops/sub_native.h>
#include <ATen/ops/tanh_backward_native.h>
#include <ATen/ops/tanh_native.h>
#include <ATen/ops/threshold_backward_native.h>
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

// The lean lane (StructuredOnDevice.h) of operator Op, through the CPU's structured class
// CpuStructured, whose impl() only calls its STUB (the STUBs are registered at the end of
// this file).
template <typename Op, typename CpuStructured>
struct Lane {};

template <typename Op, typename CpuStructured>
void impl_structured(torch::Library& library, Lane<Op, CpuStructured> /*lane*/) {
  library.impl(qualified_name<Op>().c_str(),
               TORCH_FN((at::native::openreg::StructuredOnDevice<Op, CpuStructured>::call)));
  note_route("aten::" + qualified_name<Op>(), Route::DirectKernel);
}

// DOC START: structured-kernel-list
template <typename... Lanes>
size_t impl_structured_all(torch::Library& library) {
  (impl_structured(library, Lanes{}), ...);
  return sizeof...(Lanes);
}

size_t register_structured_ops(torch::Library& library) {
  namespace ops = at::_ops;
  namespace cpu = at::native;
  return impl_structured_all<
      // arithmetic, functional and in place
      Lane<ops::add_Tensor, cpu::structured_ufunc_add_CPU>,
      Lane<ops::add__Tensor, cpu::structured_ufunc_add_CPU>,
      Lane<ops::sub_Tensor, cpu::structured_sub_out>,
      Lane<ops::sub__Tensor, cpu::structured_sub_out>,
      Lane<ops::mul_Tensor, cpu::structured_mul_out>,
      Lane<ops::mul__Tensor, cpu::structured_mul_out>,
      Lane<ops::div_Tensor, cpu::structured_div_out>,
      Lane<ops::div__Tensor, cpu::structured_div_out>,
      Lane<ops::maximum, cpu::structured_maximum_out>,
      // unary, activations and their backward
      Lane<ops::neg, cpu::structured_neg_out>,
      Lane<ops::exp, cpu::structured_exp_out>,
      Lane<ops::log, cpu::structured_log_out>,
      Lane<ops::sqrt, cpu::structured_sqrt_out>,
      Lane<ops::rsqrt, cpu::structured_rsqrt_out>,
      Lane<ops::tanh, cpu::structured_tanh_out>,
      Lane<ops::tanh_backward, cpu::structured_tanh_backward_out>,
      Lane<ops::sigmoid, cpu::structured_sigmoid_out>,
      Lane<ops::sigmoid_backward, cpu::structured_sigmoid_backward_out>,
      Lane<ops::silu, cpu::structured_silu_out>,
      Lane<ops::silu_backward, cpu::structured_silu_backward_out>,
      Lane<ops::threshold_backward, cpu::structured_threshold_backward_out>,
      // optimizer updates
      Lane<ops::addcmul_, cpu::structured_addcmul_out>,
      Lane<ops::addcdiv_, cpu::structured_addcdiv_out>,
      Lane<ops::lerp__Scalar, cpu::structured_lerp_Scalar>,
      Lane<ops::lerp__Tensor, cpu::structured_lerp_Tensor>>(library);
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
      // arithmetic, functional and in place (more in register_structured_ops)
      ops::pow_Tensor_Scalar, ops::clamp_min, ops::where_self, ops::eq_Scalar,
      ops::fill__Scalar, ops::zero_, ops::masked_fill__Scalar,
      // reductions and matrix products
      ops::sum_dim_IntList, ops::mean_dim, ops::amax, ops::addmm, ops::mm, ops::bmm,
      ops::baddbmm, ops::index_select,
      // activations, losses, normalisation, and their backward
      ops::relu, ops::relu_, ops::gelu, ops::gelu_backward, ops::_softmax,
      ops::_softmax_backward_data, ops::_log_softmax, ops::_log_softmax_backward_data,
      ops::nll_loss_forward, ops::nll_loss_backward, ops::native_layer_norm,
      ops::native_layer_norm_backward>(library);
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

#define OPENREG_STUB_ON_KERNEL_VIEW(stub) \
  REGISTER_PRIVATEUSE1_DISPATCH(stub, (on_kernel_view<decltype(stub), stub>))
// sub's structured kernel calls add_stub with -alpha (the CPU has no sub_stub entry).
OPENREG_STUB_ON_KERNEL_VIEW(add_stub)
OPENREG_STUB_ON_KERNEL_VIEW(mul_stub)
OPENREG_STUB_ON_KERNEL_VIEW(div_true_stub)
OPENREG_STUB_ON_KERNEL_VIEW(maximum_stub)
OPENREG_STUB_ON_KERNEL_VIEW(neg_stub)
OPENREG_STUB_ON_KERNEL_VIEW(exp_stub)
OPENREG_STUB_ON_KERNEL_VIEW(log_stub)
OPENREG_STUB_ON_KERNEL_VIEW(sqrt_stub)
OPENREG_STUB_ON_KERNEL_VIEW(rsqrt_stub)
OPENREG_STUB_ON_KERNEL_VIEW(tanh_stub)
OPENREG_STUB_ON_KERNEL_VIEW(tanh_backward_stub)
OPENREG_STUB_ON_KERNEL_VIEW(sigmoid_stub)
OPENREG_STUB_ON_KERNEL_VIEW(sigmoid_backward_stub)
OPENREG_STUB_ON_KERNEL_VIEW(silu_stub)
OPENREG_STUB_ON_KERNEL_VIEW(silu_backward_stub)
OPENREG_STUB_ON_KERNEL_VIEW(threshold_stub)
OPENREG_STUB_ON_KERNEL_VIEW(addcmul_stub)
OPENREG_STUB_ON_KERNEL_VIEW(addcdiv_stub)
OPENREG_STUB_ON_KERNEL_VIEW(lerp_kernel_scalar_weight)
OPENREG_STUB_ON_KERNEL_VIEW(lerp_kernel_tensor_weight)
#undef OPENREG_STUB_ON_KERNEL_VIEW
} // namespace at::native
// DOC END: structured-kernel-stubs
