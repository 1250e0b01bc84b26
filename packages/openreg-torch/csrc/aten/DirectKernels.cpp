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
#include <ATen/ops/acos_native.h>
#include <ATen/ops/acosh_native.h>
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
#include <ATen/ops/asin_native.h>
#include <ATen/ops/asinh_native.h>
#include <ATen/ops/atan_native.h>
#include <ATen/ops/atanh_native.h>
#include <ATen/ops/baddbmm_native.h>
#include <ATen/ops/bitwise_not_native.h>
#include <ATen/ops/bmm_native.h>
#include <ATen/ops/cat_native.h>
#include <ATen/ops/ceil_native.h>
#include <ATen/ops/cos_native.h>
#include <ATen/ops/cosh_native.h>
#include <ATen/ops/cumprod_native.h>
#include <ATen/ops/cumsum_native.h>
#include <ATen/ops/digamma_native.h>
#include <ATen/ops/div_native.h>
#include <ATen/ops/eq_native.h>
#include <ATen/ops/erf_native.h>
#include <ATen/ops/erfc_native.h>
#include <ATen/ops/erfinv_native.h>
#include <ATen/ops/exp2_native.h>
#include <ATen/ops/exp_native.h>
#include <ATen/ops/expm1_native.h>
#include <ATen/ops/floor_native.h>
#include <ATen/ops/frac_native.h>
#include <ATen/ops/gather_native.h>
#include <ATen/ops/ge_native.h>
#include <ATen/ops/gt_native.h>
#include <ATen/ops/le_native.h>
#include <ATen/ops/lerp_native.h>
#include <ATen/ops/lgamma_native.h>
#include <ATen/ops/linalg_vector_norm_native.h>
#include <ATen/ops/log10_native.h>
#include <ATen/ops/log1p_native.h>
#include <ATen/ops/log2_native.h>
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
#include <ATen/ops/reciprocal_native.h>
#include <ATen/ops/round_native.h>
#include <ATen/ops/rsqrt_native.h>
#include <ATen/ops/sigmoid_backward_native.h>
#include <ATen/ops/sigmoid_native.h>
#include <ATen/ops/sign_native.h>
#include <ATen/ops/silu_backward_native.h>
#include <ATen/ops/silu_native.h>
#include <ATen/ops/sin_native.h>
#include <ATen/ops/sinc_native.h>
#include <ATen/ops/sinh_native.h>
#include <ATen/ops/sort_native.h>
#include <ATen/ops/sqrt_native.h>
#include <ATen/ops/sub_native.h>
#include <ATen/ops/sum_native.h>
#include <ATen/ops/tan_native.h>
#include <ATen/ops/tanh_backward_native.h>
#include <ATen/ops/tanh_native.h>
#include <ATen/ops/threshold_backward_native.h>
#include <ATen/ops/topk_native.h>
#include <ATen/ops/tril_native.h>
#include <ATen/ops/triu_native.h>
#include <ATen/ops/trunc_native.h>
#include <torch/library.h>

#include "aten/DirectKernels.h"
#include "aten/OperatorRoutes.h"
#include "aten/native/Activation.h"
#include "aten/native/Pow.h"
#include "aten/native/StructuredOnDevice.h"
#include "aten/native/StructuredPrecomputed.h"
#include "aten/native/TensorCompare.h"
#include "aten/native/UnaryOps.h"
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

// Registers Kernel::call as operator Op's PrivateUse1 kernel (a direct kernel or a lane).
template <typename Op, typename Kernel>
size_t impl_kernel(torch::Library& library) {
  library.impl(qualified_name<Op>().c_str(), TORCH_FN(Kernel::call));
  note_route("aten::" + qualified_name<Op>(), Route::DirectKernel);
  return 1;
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

template <typename Op, typename CpuStructured, Outputs outputs = Outputs::CommonDtype>
struct StubLane {
  static size_t impl(torch::Library& library) {
    return impl_kernel<Op, at::native::openreg::StructuredOnDevice<Op, CpuStructured, outputs>>(
        library);
  }
};
// Comparisons: their CPU loops write bool outputs from inputs of the common dtype.
template <typename Op, typename CpuStructured>
using ComparisonLane = StubLane<Op, CpuStructured, Outputs::BoolOrCommonDtype>;
// A unary operator's functional and in-place forms (sin and sin_), one structured class.
template <typename Functional, typename InPlace, typename CpuStructured>
struct UnaryLanes {
  static size_t impl(torch::Library& library) {
    return StubLane<Functional, CpuStructured>::impl(library) +
           StubLane<InPlace, CpuStructured>::impl(library);
  }
};
template <typename Op, typename CpuStructured>
struct AliasLane {
  static size_t impl(torch::Library& library) {
    return impl_kernel<Op, at::native::openreg::StructuredOnAliases<Op, CpuStructured>>(library);
  }
};

// DOC START: structured-kernel-list
template <typename... Lanes>
size_t impl_lanes(torch::Library& library) {
  return (Lanes::impl(library) + ...);
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
      UnaryLanes<ops::sin, ops::sin_, cpu::structured_sin_out>,
      UnaryLanes<ops::cos, ops::cos_, cpu::structured_cos_out>,
      UnaryLanes<ops::tan, ops::tan_, cpu::structured_tan_out>,
      UnaryLanes<ops::asin, ops::asin_, cpu::structured_asin_out>,
      UnaryLanes<ops::acos, ops::acos_, cpu::structured_acos_out>,
      UnaryLanes<ops::atan, ops::atan_, cpu::structured_atan_out>,
      UnaryLanes<ops::sinh, ops::sinh_, cpu::structured_sinh_out>,
      UnaryLanes<ops::cosh, ops::cosh_, cpu::structured_cosh_out>,
      UnaryLanes<ops::asinh, ops::asinh_, cpu::structured_asinh_out>,
      UnaryLanes<ops::acosh, ops::acosh_, cpu::structured_acosh_out>,
      UnaryLanes<ops::atanh, ops::atanh_, cpu::structured_atanh_out>,
      UnaryLanes<ops::exp2, ops::exp2_, cpu::structured_exp2_out>,
      UnaryLanes<ops::expm1, ops::expm1_, cpu::structured_expm1_out>,
      UnaryLanes<ops::log2, ops::log2_, cpu::structured_log2_out>,
      UnaryLanes<ops::log10, ops::log10_, cpu::structured_log10_out>,
      UnaryLanes<ops::log1p, ops::log1p_, cpu::structured_log1p_out>,
      UnaryLanes<ops::reciprocal, ops::reciprocal_, cpu::structured_reciprocal_out>,
      UnaryLanes<ops::erf, ops::erf_, cpu::structured_erf_out>,
      UnaryLanes<ops::erfc, ops::erfc_, cpu::structured_erfc_out>,
      UnaryLanes<ops::erfinv, ops::erfinv_, cpu::structured_erfinv_out>,
      UnaryLanes<ops::lgamma, ops::lgamma_, cpu::structured_lgamma_out>,
      UnaryLanes<ops::digamma, ops::digamma_, cpu::structured_digamma_out>,
      UnaryLanes<ops::sinc, ops::sinc_, cpu::structured_sinc_out>,
      UnaryLanes<ops::sign, ops::sign_, cpu::structured_sign_out>,
      UnaryLanes<ops::frac, ops::frac_, cpu::structured_frac_out>,
      UnaryLanes<ops::bitwise_not, ops::bitwise_not_, cpu::structured_bitwise_not_out>,
      UnaryLanes<ops::floor, ops::floor_, cpu::structured_floor_out>,
      UnaryLanes<ops::ceil, ops::ceil_, cpu::structured_ceil_out>,
      UnaryLanes<ops::trunc, ops::trunc_, cpu::structured_trunc_out>,
      UnaryLanes<ops::round, ops::round_, cpu::structured_round_out>,
      UnaryLanes<ops::neg, ops::neg_, cpu::structured_neg_out>,
      UnaryLanes<ops::exp, ops::exp_, cpu::structured_exp_out>,
      UnaryLanes<ops::log, ops::log_, cpu::structured_log_out>,
      UnaryLanes<ops::sqrt, ops::sqrt_, cpu::structured_sqrt_out>,
      UnaryLanes<ops::rsqrt, ops::rsqrt_, cpu::structured_rsqrt_out>,
      UnaryLanes<ops::tanh, ops::tanh_, cpu::structured_tanh_out>,
      StubLane<ops::tanh_backward, cpu::structured_tanh_backward_out>,
      UnaryLanes<ops::sigmoid, ops::sigmoid_, cpu::structured_sigmoid_out>,
      StubLane<ops::sigmoid_backward, cpu::structured_sigmoid_backward_out>,
      UnaryLanes<ops::silu, ops::silu_, cpu::structured_silu_out>,
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
      AliasLane<ops::tril, cpu::structured_tril_cpu>,
      AliasLane<ops::triu, cpu::structured_triu_cpu>,
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
  return (impl_kernel<Ops, at::native::openreg::DirectKernel<Ops>>(library) + ...);
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
      ops::native_layer_norm_backward, ops::native_dropout_backward,
      ops::embedding_dense_backward,
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
OPENREG_STUB_ON_KERNEL_VIEW(sin_stub)
OPENREG_STUB_ON_KERNEL_VIEW(cos_stub)
OPENREG_STUB_ON_KERNEL_VIEW(tan_stub)
OPENREG_STUB_ON_KERNEL_VIEW(asin_stub)
OPENREG_STUB_ON_KERNEL_VIEW(acos_stub)
OPENREG_STUB_ON_KERNEL_VIEW(atan_stub)
OPENREG_STUB_ON_KERNEL_VIEW(sinh_stub)
OPENREG_STUB_ON_KERNEL_VIEW(cosh_stub)
OPENREG_STUB_ON_KERNEL_VIEW(asinh_stub)
OPENREG_STUB_ON_KERNEL_VIEW(acosh_stub)
OPENREG_STUB_ON_KERNEL_VIEW(atanh_stub)
OPENREG_STUB_ON_KERNEL_VIEW(exp2_stub)
OPENREG_STUB_ON_KERNEL_VIEW(expm1_stub)
OPENREG_STUB_ON_KERNEL_VIEW(log2_stub)
OPENREG_STUB_ON_KERNEL_VIEW(log10_stub)
OPENREG_STUB_ON_KERNEL_VIEW(log1p_stub)
OPENREG_STUB_ON_KERNEL_VIEW(reciprocal_stub)
OPENREG_STUB_ON_KERNEL_VIEW(erf_stub)
OPENREG_STUB_ON_KERNEL_VIEW(erfc_stub)
OPENREG_STUB_ON_KERNEL_VIEW(erfinv_stub)
OPENREG_STUB_ON_KERNEL_VIEW(lgamma_stub)
OPENREG_STUB_ON_KERNEL_VIEW(digamma_stub)
OPENREG_STUB_ON_KERNEL_VIEW(sinc_stub)
OPENREG_STUB_ON_KERNEL_VIEW(sign_stub)
OPENREG_STUB_ON_KERNEL_VIEW(frac_stub)
OPENREG_STUB_ON_KERNEL_VIEW(bitwise_not_stub)
OPENREG_STUB_ON_KERNEL_VIEW(floor_stub)
OPENREG_STUB_ON_KERNEL_VIEW(ceil_stub)
OPENREG_STUB_ON_KERNEL_VIEW(trunc_stub)
OPENREG_STUB_ON_KERNEL_VIEW(round_stub)
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

// A STUB that a composite operator calls itself: kaiser_window (CompositeExplicitAutograd)
// builds an iterator over openreg tensors (arange's result and the window) and calls
// kaiser_window_stub for the device. No openreg kernel is running, so this entry launches
// the CPU's loop on the kernel view as a kernel of its own.
namespace {
void kaiser_window_on_device(TensorIteratorBase& iter, int64_t window_length, double beta) {
  openreg::launch_on_kernel_view(iter, "aten::kaiser_window", [&] {
    kaiser_window_stub(c10::DeviceType::CPU, iter, window_length, beta);
  });
}
} // namespace
REGISTER_PRIVATEUSE1_DISPATCH(kaiser_window_stub, &kaiser_window_on_device)
} // namespace at::native
// DOC END: structured-kernel-stubs
