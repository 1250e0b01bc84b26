#include "aten/native/Convolution.h"

#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>

#include "aten/native/DeviceKernel.h"
#include "aten/native/KernelView.h"

namespace at::native::openreg {

// DOC START: convolution
Tensor convolution_overrideable(const Tensor& input, const Tensor& weight,
                                const std::optional<Tensor>& bias, c10::IntArrayRef stride,
                                c10::IntArrayRef padding, c10::IntArrayRef dilation,
                                bool transposed, c10::IntArrayRef output_padding,
                                int64_t groups) {
  return run_cpu_kernel(input.device(), [&] {
    const std::optional<Tensor> bias_view =
        bias.has_value() && bias->defined() ? std::optional<Tensor>(kernel_alias(*bias))
                                            : std::nullopt;
    return at::convolution(kernel_alias(input), kernel_alias(weight), bias_view, stride,
                           padding, dilation, transposed, output_padding, groups);
  });
}
// DOC END: convolution

std::tuple<Tensor, Tensor, Tensor> convolution_backward_overrideable(
    const Tensor& grad_output, const Tensor& input, const Tensor& weight,
    c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
    bool transposed, c10::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> output_mask) {
  // The bias gradient needs the bias shape: one value per output channel.
  const int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
  const std::vector<int64_t> bias_sizes{out_channels};
  return run_cpu_kernel(input.device(), [&] {
    return at::convolution_backward(
        kernel_alias(grad_output), kernel_alias(input), kernel_alias(weight),
        output_mask[2] ? at::OptionalIntArrayRef(bias_sizes) : std::nullopt, stride, padding,
        dilation, transposed, output_padding, groups, output_mask);
  });
}

} // namespace at::native::openreg
