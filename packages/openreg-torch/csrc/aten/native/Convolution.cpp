#include "aten/native/Convolution.h"

#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>

#include "execution/RunOnDevice.h"

namespace at::native::openreg {

// DOC START: convolution
Tensor convolution_overrideable(const Tensor& input, const Tensor& weight,
                                const std::optional<Tensor>& bias, c10::IntArrayRef stride,
                                c10::IntArrayRef padding, c10::IntArrayRef dilation,
                                bool transposed, c10::IntArrayRef output_padding,
                                int64_t groups) {
  // PyTorch's own convolution, on the CPU: it picks the CPU's algorithm (mkldnn...).
  return run_on_device<Tensor>(
      "aten::convolution_overrideable",
      [&](const Tensor& input_view, const Tensor& weight_view,
          const std::optional<Tensor>& bias_view) {
        return at::convolution(input_view, weight_view, bias_view, stride, padding, dilation,
                               transposed, output_padding, groups);
      },
      input, weight, bias);
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
  return run_on_device<std::tuple<Tensor, Tensor, Tensor>>(
      "aten::convolution_backward_overrideable",
      [&](const Tensor& grad_output_view, const Tensor& input_view, const Tensor& weight_view) {
        return at::convolution_backward(
            grad_output_view, input_view, weight_view,
            output_mask[2] ? at::OptionalIntArrayRef(bias_sizes) : std::nullopt, stride,
            padding, dilation, transposed, output_padding, groups, output_mask);
      },
      grad_output, input, weight);
}

} // namespace at::native::openreg
