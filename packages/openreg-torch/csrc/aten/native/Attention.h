#pragma once

// Scaled dot-product attention picks its implementation through a dispatch stub that
// PrivateUse1 must fill; without it openreg would always take the slow math path.

#include <ATen/core/Tensor.h>

namespace at::native::openreg {

// Chooses exactly as the CPU does for the same inputs (so results match the CPU's).
int64_t fused_sdp_choice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                         const std::optional<at::Tensor>& attn_mask, double dropout_p,
                         bool is_causal, std::optional<double> scale, bool enable_gqa);

} // namespace at::native::openreg
