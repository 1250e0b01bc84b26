#include "aten/native/Convolution.h"

#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>

#include "execution/RunOnDevice.h"

namespace at::native::openreg {

// DOC START: convolution
// The results are contiguous, whatever layout the CPU's algorithm chose (mkldnn returns
// channels_last for a channels_last input): torch.compile plans a PrivateUse1 convolution
// ("Overrideable") with the strides of PyTorch's fake kernel, which are contiguous for every
// device but XPU (_conv_determine_backend_memory_format). Inductor's code indexes the result
// by those strides, so other strides fail its checks or, unchecked (AOTInductor), give wrong
// values.
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
                               transposed, output_padding, groups)
            .contiguous();
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
        // Contiguous input and weight gradients, as the fake kernel says (see above).
        auto [grad_input, grad_weight, grad_bias] = at::convolution_backward(
            grad_output_view, input_view, weight_view,
            output_mask[2] ? at::OptionalIntArrayRef(bias_sizes) : std::nullopt, stride,
            padding, dilation, transposed, output_padding, groups, output_mask);
        return std::make_tuple(grad_input.defined() ? grad_input.contiguous() : grad_input,
                               grad_weight.defined() ? grad_weight.contiguous() : grad_weight,
                               grad_bias);
      },
      grad_output, input, weight);
}

} // namespace at::native::openreg
