#include "native/CustomOps.h"

#include <ATen/Dispatch_v2.h>
#include <ATen/TensorIterator.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/ScalarType.h>
#include <torch/csrc/autograd/custom_function.h>

#include <openreg_torch/execution/DeviceLoops.h>

namespace at::native::openreg_extra {

at::Tensor custom_abs(const at::Tensor& input) {
  // An output laid out like the input (what the meta kernel promises), real for complex.
  at::Tensor out = at::empty_like(
      input, input.options().dtype(c10::toRealValueType(input.scalar_type())));
  at::abs_out(out, input);
  return out;
}

at::Tensor custom_square(const at::Tensor& input) {
  at::Tensor out = at::empty_like(input);
  auto iter = at::TensorIterator::unary_op(out, input);
  AT_DISPATCH_V2(iter.dtype(), "custom_square_openreg", AT_WRAP([&] {
    at::native::openreg::unary_device_kernel<scalar_t>(
        iter, "openreg::custom_square", [](scalar_t a) { return static_cast<scalar_t>(a * a); });
  }), AT_EXPAND(AT_FLOATING_TYPES), AT_EXPAND(AT_COMPLEX_TYPES), kHalf, kBFloat16);
  return out;
}

namespace {

// DOC START: custom-square-function
// The autograd of openreg::custom_square, registered for AutogradPrivateUse1 apart from
// the forward kernel: forward saves the input and runs the operator below autograd (the
// PrivateUse1 kernel, or the fake kernel under FakeTensorMode); backward is built from
// differentiable device operators, so double backward works as well.
class CustomSquareFunction : public torch::autograd::Function<CustomSquareFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input) {
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("openreg::custom_square", "")
                               .typed<at::Tensor(const at::Tensor&)>();
    ctx->save_for_backward({input});
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return op.call(input);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const at::Tensor input = ctx->get_saved_variables()[0];
    // d(x*x)/dx = 2x; for complex inputs PyTorch's convention takes the conjugate.
    return {grad_outputs[0] * (input * 2).conj()};
  }
};
// DOC END: custom-square-function

} // namespace

at::Tensor custom_square_autograd(const at::Tensor& input) {
  return CustomSquareFunction::apply(input);
}

} // namespace at::native::openreg_extra
