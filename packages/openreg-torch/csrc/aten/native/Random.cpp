#include "aten/native/Random.h"

#include <ATen/ops/empty_like.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/zeros_like.h>

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
  // The CPU's dropout: noise ~ Bernoulli(1 - p) in the input's dtype, scaled in place.
  Tensor noise = at::empty_like(input).bernoulli_(1 - p);
  noise.div_(1 - p);
  return {input.mul(noise), noise.ne(0)};
}
// DOC END: native-dropout

} // namespace at::native::openreg
