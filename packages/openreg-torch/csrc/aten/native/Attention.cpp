#include "aten/native/Attention.h"

#include <ATen/ops/_fused_sdp_choice_native.h>

namespace at::native::openreg {

// DOC START: sdp-choice
int64_t fused_sdp_choice(const Tensor& query, const Tensor& key, const Tensor& value,
                         const std::optional<Tensor>& attn_mask, double dropout_p,
                         bool is_causal, std::optional<double> scale, bool enable_gqa) {
  // The choice reads only metadata (shapes, strides, dtypes, flags, which inputs require
  // grad), never values: ask the CPU's chooser itself about these tensors. A "flash"
  // choice then runs _scaled_dot_product_flash_attention_for_cpu (and its backward) on
  // openreg through the fallback. Called directly, not through the dispatcher, it also
  // answers for the fake tensors of torch.compile, symbolic shapes included.
  return at::native::_fused_sdp_choice_cpp(query, key, value, attn_mask, dropout_p, is_causal,
                                           scale, enable_gqa);
}
// DOC END: sdp-choice

} // namespace at::native::openreg
