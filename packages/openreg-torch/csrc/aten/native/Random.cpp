#include "aten/native/Random.h"

#include <ATen/ops/empty_like.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/zeros_like.h>

#include "execution/RunOnDevice.h"

namespace at::native::openreg {

// DOC START: native-dropout
std::tuple<Tensor, Tensor> native_dropout(const Tensor& input, double p,
                                          std::optional<bool> train) {
  // p == 0 still draws (an all-ones mask): the generator then advances as the CPU's and
  // CUDA's do, and the numbers drawn after this call are theirs.
  if (input.numel() == 0 || !train.value_or(true)) {
    return {input.clone(), at::ones_like(input, input.options().dtype(at::kBool))};
  }
  if (p == 1) {
    return {at::zeros_like(input), at::zeros_like(input, input.options().dtype(at::kBool))};
  }
  // The CPU's dropout: noise ~ Bernoulli(1 - p) in the input's dtype, scaled in place, drawn
  // from the CPU generator the device's default generator wraps. One kernel: four device
  // operators would each pay a dispatch and a launch (a small dropout took 1.7 times the
  // CPU's time so).
  return run_on_device<std::tuple<Tensor, Tensor>>(
      "aten::native_dropout",
      [p](const Tensor& kernel_input, const std::optional<at::Generator>& generator) {
        Tensor noise = at::empty_like(kernel_input).bernoulli_(1 - p, generator);
        noise.div_(1 - p);
        return std::make_tuple(kernel_input.mul(noise), noise.ne(0));
      },
      input, std::optional<at::Generator>());
}
// DOC END: native-dropout

} // namespace at::native::openreg
