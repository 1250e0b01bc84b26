#pragma once

// Scaled dot-product attention asks aten::_fused_sdp_choice which implementation to run;
// openreg answers as the CPU would, so attention on openreg matches the CPU's.

#include <ATen/core/Tensor.h>

namespace at::native::openreg {

// Chooses exactly as the CPU does for the same inputs (so results match the CPU's).
int64_t fused_sdp_choice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                         const std::optional<at::Tensor>& attn_mask, double dropout_p,
                         bool is_causal, std::optional<double> scale, bool enable_gqa);

} // namespace at::native::openreg
