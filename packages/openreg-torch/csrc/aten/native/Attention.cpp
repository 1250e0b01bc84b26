#include "aten/native/Attention.h"

#include <ATen/ops/_fused_sdp_choice.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include "execution/KernelView.h"

namespace at::native::openreg {

// DOC START: sdp-choice
int64_t fused_sdp_choice(const Tensor& query, const Tensor& key, const Tensor& value,
                         const std::optional<Tensor>& attn_mask, double dropout_p,
                         bool is_causal, std::optional<double> scale, bool enable_gqa) {
  // The choice reads shapes, dtypes, flags and which inputs require grad: ask the CPU's
  // chooser about kernel views that carry the same requires_grad. A "flash" choice then
  // runs _scaled_dot_product_flash_attention_for_cpu (and its backward) on openreg
  // through the fallback. The inner call skips Python modes: an active one (e.g. the
  // FakeTensorMode of torch.compile) would be handed these real views and reject them.
  const auto view = [](const Tensor& tensor) {
    Tensor alias = kernel_alias(tensor);
    if (tensor.requires_grad()) {
      alias.requires_grad_(true);
    }
    return alias;
  };
  const std::optional<Tensor> mask = attn_mask.has_value() && attn_mask->defined()
      ? std::optional<Tensor>(view(*attn_mask))
      : std::nullopt;
  const c10::impl::ExcludeDispatchKeyGuard no_python_modes(
      c10::DispatchKeySet({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot}));
  return at::_fused_sdp_choice(view(query), view(key), view(value), mask, dropout_p, is_causal,
                               scale, enable_gqa);
}
// DOC END: sdp-choice

} // namespace at::native::openreg
