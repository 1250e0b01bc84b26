// Which operators get a direct kernel: those a training step calls most (elementwise
// arithmetic, matrix products, activations and their backward, losses, normalisation,
// optimizer updates). Everything else keeps the boxed zero-copy fallback; the results
// are the same, only the per-call overhead differs (see benchmarks/).

#include <ATen/Operators.h>
#include <torch/library.h>

#include "aten/DirectKernels.h"
#include "aten/OperatorRoutes.h"
#include "execution/RunOnDevice.h"

namespace at::openreg {
namespace {

template <typename Op>
void impl(torch::Library& library) {
  const std::string name = std::string(Op::name).substr(6);  // drop "aten::"
  const std::string overload = Op::overload_name;
  const std::string qualified = overload.empty() ? name : name + "." + overload;
  library.impl(qualified.c_str(), TORCH_FN(at::native::openreg::DirectKernel<Op>::call));
  note_route("aten::" + qualified, Route::DirectKernel);
}

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
      ops::add_Tensor, ops::add__Tensor, ops::sub_Tensor, ops::sub__Tensor,
      ops::mul_Tensor, ops::mul__Tensor, ops::div_Tensor, ops::div__Tensor,
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
  return register_hot_ops(library);
}

} // namespace at::openreg
