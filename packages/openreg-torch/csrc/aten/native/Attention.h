#pragma once

// Scaled dot-product attention on openreg, the way a vendor backend plugs in: PyTorch asks
// aten::_fused_sdp_choice (and its dispatch stub) which implementation to run, and for
// SDPBackend::overrideable calls _scaled_dot_product_fused_attention_overrideable and its
// backward, the PrivateUse1 entry points. openreg backs them with the CPU's fused (flash)
// attention on kernel views, so attention on openreg matches the CPU's.

#include <ATen/core/Tensor.h>

#include <array>
#include <optional>
#include <tuple>

namespace at::native::openreg {

// The overrideable backend whenever the CPU would run its fused kernel on these inputs
// (and the user left SDPBackend.OVERRIDEABLE enabled); otherwise the CPU's own answer.
int64_t fused_sdp_choice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                         const std::optional<at::Tensor>& attn_mask, double dropout_p,
                         bool is_causal, std::optional<double> scale, bool enable_gqa);

// Returns (output, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, philox_seed,
// philox_offset, debug_attn_mask) as the operator's schema says; the cumulative sequence
// lengths and the debug mask are undefined (dense inputs, no debug mask).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt, c10::SymInt,
           at::Tensor, at::Tensor, at::Tensor>
scaled_dot_product_fused_attention_overrideable(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
    const std::optional<at::Tensor>& attn_bias, double dropout_p, bool is_causal,
    bool return_debug_mask, std::optional<double> scale);

// Returns (grad_query, grad_key, grad_value, grad_attn_bias); no mask gradient (the
// choice never sends a mask that requires grad here).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>
scaled_dot_product_fused_attention_overrideable_backward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key,
    const at::Tensor& value, const at::Tensor& attn_bias, std::array<bool, 4> grad_input_mask,
    const at::Tensor& out, const at::Tensor& logsumexp, const at::Tensor& cum_seq_q,
    const at::Tensor& cum_seq_k, c10::SymInt max_q, c10::SymInt max_k, double dropout_p,
    bool is_causal, const at::Tensor& philox_seed, const at::Tensor& philox_offset,
    std::optional<double> scale);

} // namespace at::native::openreg
