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
#include <ATen/native/Pow.h>
#include <ATen/native/TensorCompare.h>
#include <ATen/native/UnaryOps.h>
#include <ATen/ops/_log_softmax_backward_data_native.h>
#include <ATen/ops/_log_softmax_native.h>
#include <ATen/ops/_softmax_backward_data_native.h>
#include <ATen/ops/_softmax_native.h>
#include <ATen/ops/add_native.h>
#include <ATen/ops/addcdiv_native.h>
#include <ATen/ops/addcmul_native.h>
#include <ATen/ops/addmm_native.h>
#include <ATen/ops/all_native.h>
#include <ATen/ops/amax_native.h>
#include <ATen/ops/amin_native.h>
#include <ATen/ops/aminmax_native.h>
#include <ATen/ops/any_native.h>
#include <ATen/ops/argmax_native.h>
#include <ATen/ops/argmin_native.h>
#include <ATen/ops/baddbmm_native.h>
#include <ATen/ops/bmm_native.h>
#include <ATen/ops/cat_native.h>
#include <ATen/ops/cumprod_native.h>
#include <ATen/ops/cumsum_native.h>
#include <ATen/ops/div_native.h>
#include <ATen/ops/eq_native.h>
#include <ATen/ops/exp_native.h>
#include <ATen/ops/gather_native.h>
#include <ATen/ops/ge_native.h>
#include <ATen/ops/gt_native.h>
#include <ATen/ops/le_native.h>
#include <ATen/ops/lerp_native.h>
#include <ATen/ops/linalg_vector_norm_native.h>
#include <ATen/ops/log_native.h>
#include <ATen/ops/lt_native.h>
#include <ATen/ops/max_native.h>
#include <ATen/ops/maximum_native.h>
#include <ATen/ops/mean_native.h>
#include <ATen/ops/min_native.h>
#include <ATen/ops/mm_native.h>
#include <ATen/ops/mul_native.h>
#include <ATen/ops/ne_native.h>
#include <ATen/ops/neg_native.h>
#include <ATen/ops/nll_loss_backward_native.h>
#include <ATen/ops/nll_loss_forward_native.h>
#include <ATen/ops/prod_native.h>
#include <ATen/ops/rsqrt_native.h>
#include <ATen/ops/sigmoid_backward_native.h>
#include <ATen/ops/sigmoid_native.h>
#include <ATen/ops/silu_backward_native.h>
#include <ATen/ops/silu_native.h>
#include <ATen/ops/sort_native.h>
#include <ATen/ops/sqrt_native.h>
#include <ATen/ops/sub_native.h>
#include <ATen/ops/sum_native.h>
#include <ATen/ops/tanh_backward_native.h>
#include <ATen/ops/tanh_native.h>
#include <ATen/ops/threshold_backward_native.h>
#include <ATen/ops/topk_native.h>
#include <torch/library.h>

#include "aten/DirectKernels.h"
#include "aten/OperatorRoutes.h"
#include "aten/native/Activation.h"
#include "aten/native/StructuredOnDevice.h"
#include "aten/native/Pow.h"
#include "aten/native/StructuredPrecomputed.h"
#include "aten/native/TensorCompare.h"
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

// The lean lanes (aten/native/StructuredOnDevice.h) of operator Op, through the CPU's
// structured class CpuStructured: a TensorIterator kernel whose impl() only calls its
// STUB (the STUBs are registered at the end of this file; the calls for which it does
// more leave the lane, LeavesToDirectKernel), or a kernel whose impl() reads its tensor
// arguments (run on their kernel-view aliases). Not gelu: for contiguous
// float32 and bfloat16 tensors the CPU's gelu runs oneDNN's kernel, whose results differ
// from the STUB's in the last bits (gelu(inf) is nan there); its direct kernel runs the
// CPU's impl() on CPU aliases, which takes the same branch as on the CPU.
using at::native::openreg::structured_detail::Outputs;
template <typename Operator, typename CpuStructured, Outputs outputs = Outputs::CommonDtype>
struct StubLane {
  using Op = Operator;
  using Kernel = at::native::openreg::StructuredOnDevice<Op, CpuStructured, outputs>;
};
// Comparisons: their CPU loops write bool outputs from inputs of the common dtype.
template <typename Operator, typename CpuStructured>
using ComparisonLane = StubLane<Operator, CpuStructured, Outputs::BoolOrCommonDtype>;
template <typename Operator, typename CpuStructured>
struct AliasLane {
  using Op = Operator;
  using Kernel = at::native::openreg::StructuredOnAliases<Op, CpuStructured>;
};

template <typename Lane>
void impl_lane(torch::Library& library) {
  using Op = typename Lane::Op;
  library.impl(qualified_name<Op>().c_str(), TORCH_FN(Lane::Kernel::call));
  note_route("aten::" + qualified_name<Op>(), Route::DirectKernel);
}

// DOC START: structured-kernel-list
template <typename... Lanes>
size_t impl_lanes(torch::Library& library) {
  (impl_lane<Lanes>(library), ...);
  return sizeof...(Lanes);
}

size_t register_structured_ops(torch::Library& library) {
  namespace ops = at::_ops;
  namespace cpu = at::native;
  return impl_lanes<
      // arithmetic, functional and in place
      StubLane<ops::add_Tensor, cpu::structured_ufunc_add_CPU>,
      StubLane<ops::add__Tensor, cpu::structured_ufunc_add_CPU>,
      StubLane<ops::sub_Tensor, cpu::structured_sub_out>,
      StubLane<ops::sub__Tensor, cpu::structured_sub_out>,
      StubLane<ops::mul_Tensor, cpu::structured_mul_out>,
      StubLane<ops::mul__Tensor, cpu::structured_mul_out>,
      StubLane<ops::div_Tensor, cpu::structured_div_out>,
      StubLane<ops::div__Tensor, cpu::structured_div_out>,
      StubLane<ops::maximum, cpu::structured_maximum_out>,
      // comparisons
      ComparisonLane<ops::eq_Tensor, cpu::structured_eq_Tensor_out>,
      ComparisonLane<ops::eq_Scalar, cpu::structured_eq_Scalar_out>,
      ComparisonLane<ops::ne_Tensor, cpu::structured_ne_Tensor_out>,
      ComparisonLane<ops::ne_Scalar, cpu::structured_ne_Scalar_out>,
      ComparisonLane<ops::lt_Tensor, cpu::structured_lt_Tensor_out>,
      ComparisonLane<ops::lt_Scalar, cpu::structured_lt_Scalar_out>,
      ComparisonLane<ops::le_Tensor, cpu::structured_le_Tensor_out>,
      ComparisonLane<ops::le_Scalar, cpu::structured_le_Scalar_out>,
      ComparisonLane<ops::gt_Tensor, cpu::structured_gt_Tensor_out>,
      ComparisonLane<ops::gt_Scalar, cpu::structured_gt_Scalar_out>,
      ComparisonLane<ops::ge_Tensor, cpu::structured_ge_Tensor_out>,
      ComparisonLane<ops::ge_Scalar, cpu::structured_ge_Scalar_out>,
      // unary, activations and their backward
      StubLane<ops::neg, cpu::structured_neg_out>,
      StubLane<ops::exp, cpu::structured_exp_out>,
      StubLane<ops::log, cpu::structured_log_out>,
      StubLane<ops::sqrt, cpu::structured_sqrt_out>,
      StubLane<ops::rsqrt, cpu::structured_rsqrt_out>,
      StubLane<ops::tanh, cpu::structured_tanh_out>,
      StubLane<ops::tanh_backward, cpu::structured_tanh_backward_out>,
      StubLane<ops::sigmoid, cpu::structured_sigmoid_out>,
      StubLane<ops::sigmoid_backward, cpu::structured_sigmoid_backward_out>,
      StubLane<ops::silu, cpu::structured_silu_out>,
      StubLane<ops::silu_backward, cpu::structured_silu_backward_out>,
      StubLane<ops::threshold_backward, cpu::structured_threshold_backward_out>,
      StubLane<ops::relu, at::native::openreg::ReluAsClampMin>,
      StubLane<ops::relu_, at::native::openreg::ReluAsClampMin>,
      StubLane<ops::clamp, cpu::structured_clamp_out>,
      StubLane<ops::clamp_, cpu::structured_clamp_out>,
      StubLane<ops::clamp_min, cpu::structured_clamp_min_out>,
      StubLane<ops::clamp_min_, cpu::structured_clamp_min_out>,
      StubLane<ops::clamp_max, cpu::structured_clamp_max_out>,
      StubLane<ops::clamp_max_, cpu::structured_clamp_max_out>,
      StubLane<ops::pow_Tensor_Scalar, cpu::structured_pow_Tensor_Scalar_out>,
      StubLane<ops::pow__Scalar, cpu::structured_pow_Tensor_Scalar_out>,
      // optimizer updates
      StubLane<ops::addcmul_, cpu::structured_addcmul_out>,
      StubLane<ops::addcdiv_, cpu::structured_addcdiv_out>,
      StubLane<ops::lerp__Scalar, cpu::structured_lerp_Scalar>,
      StubLane<ops::lerp__Tensor, cpu::structured_lerp_Tensor>,
      StubLane<ops::addcmul, cpu::structured_addcmul_out>,
      StubLane<ops::addcdiv, cpu::structured_addcdiv_out>,
      StubLane<ops::lerp_Scalar, cpu::structured_lerp_Scalar>,
      StubLane<ops::lerp_Tensor, cpu::structured_lerp_Tensor>,
      // matrix products, softmax and reductions
      AliasLane<ops::mm, cpu::structured_mm_out_cpu>,
      AliasLane<ops::addmm, cpu::structured_addmm_out_cpu>,
      AliasLane<ops::bmm, cpu::structured_bmm_out_cpu>,
      AliasLane<ops::baddbmm, cpu::structured_baddbmm_out_cpu>,
      AliasLane<ops::_softmax, cpu::structured_softmax_cpu_out>,
      AliasLane<ops::_log_softmax, cpu::structured_log_softmax_cpu_out>,
      AliasLane<ops::_softmax_backward_data, cpu::structured_softmax_backward_cpu_out>,
      AliasLane<ops::_log_softmax_backward_data, cpu::structured_log_softmax_backward_cpu_out>,
      AliasLane<ops::sum_dim_IntList, cpu::structured_sum_out>,
      AliasLane<ops::mean_dim, cpu::structured_mean_out>,
      AliasLane<ops::amax, cpu::structured_amax_out>,
      AliasLane<ops::nll_loss_forward, cpu::structured_nll_loss_forward_out_cpu>,
      AliasLane<ops::nll_loss_backward, cpu::structured_nll_loss_backward_out_cpu>,
      // reductions, scans, selection, concatenation
      AliasLane<ops::argmax, cpu::structured_argmax_out>,
      AliasLane<ops::argmin, cpu::structured_argmin_out>,
      AliasLane<ops::any, cpu::structured_any_all_out>,
      AliasLane<ops::any_dim, cpu::structured_any_out>,
      AliasLane<ops::any_dims, cpu::structured_any_dims_out>,
      AliasLane<ops::all, cpu::structured_all_all_out>,
      AliasLane<ops::all_dim, cpu::structured_all_out>,
      AliasLane<ops::all_dims, cpu::structured_all_dims_out>,
      AliasLane<ops::amin, cpu::structured_amin_out>,
      AliasLane<ops::aminmax, cpu::structured_aminmax_out>,
      AliasLane<ops::cumsum, cpu::structured_cumsum_out>,
      AliasLane<ops::cumprod, cpu::structured_cumprod_out>,
      AliasLane<ops::prod_dim_int, cpu::structured_prod_out>,
      AliasLane<ops::linalg_vector_norm, cpu::structured_linalg_vector_norm_out>,
      AliasLane<ops::max_dim, cpu::structured_max_out>,
      AliasLane<ops::min_dim, cpu::structured_min_out>,
      AliasLane<ops::topk, cpu::structured_topk_out_cpu>,
      AliasLane<ops::sort_stable, cpu::structured_sort_stable_out>,
      AliasLane<ops::cat, cpu::structured_cat_out_cpu>,
      AliasLane<ops::gather, cpu::structured_gather_out>>(library);
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
      ops::where_self,
      ops::fill__Scalar, ops::zero_, ops::masked_fill__Scalar,
      ops::index_select,
      // activations, losses, normalisation, and their backward
      ops::gelu, ops::gelu_backward, ops::native_layer_norm,
      ops::native_layer_norm_backward,
      // random operators: their CPU kernels draw from the CPU generator an openreg one
      // wraps (kernel_generator); initialisation, dropout, sampling
      ops::bernoulli__float, ops::bernoulli__Tensor, ops::normal_, ops::uniform_,
      ops::random_, ops::random__from, ops::random__to, ops::exponential_, ops::cauchy_,
      ops::log_normal_, ops::geometric_, ops::multinomial, ops::poisson,
      ops::normal_Tensor_float, ops::normal_float_Tensor, ops::normal_Tensor_Tensor>(library);
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
OPENREG_STUB_ON_KERNEL_VIEW(eq_stub)
OPENREG_STUB_ON_KERNEL_VIEW(ne_stub)
OPENREG_STUB_ON_KERNEL_VIEW(lt_stub)
OPENREG_STUB_ON_KERNEL_VIEW(le_stub)
OPENREG_STUB_ON_KERNEL_VIEW(gt_stub)
OPENREG_STUB_ON_KERNEL_VIEW(ge_stub)
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
OPENREG_STUB_ON_KERNEL_VIEW(clamp_scalar_stub)
OPENREG_STUB_ON_KERNEL_VIEW(clamp_min_scalar_stub)
OPENREG_STUB_ON_KERNEL_VIEW(clamp_max_scalar_stub)
OPENREG_STUB_ON_KERNEL_VIEW(pow_tensor_scalar_stub)
OPENREG_STUB_ON_KERNEL_VIEW(addcmul_stub)
OPENREG_STUB_ON_KERNEL_VIEW(addcdiv_stub)
OPENREG_STUB_ON_KERNEL_VIEW(lerp_kernel_scalar_weight)
OPENREG_STUB_ON_KERNEL_VIEW(lerp_kernel_tensor_weight)
#undef OPENREG_STUB_ON_KERNEL_VIEW
} // namespace at::native
// DOC END: structured-kernel-stubs
