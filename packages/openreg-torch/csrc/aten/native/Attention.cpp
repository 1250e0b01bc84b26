#include "aten/native/Attention.h"

#include <ATen/Context.h>
#include <ATen/SDPBackend.h>
#include <ATen/native/transformers/sdp_utils_cpp.h>
#include <ATen/ops/_fused_sdp_choice_native.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu_backward.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/full.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <limits>

#include "execution/RunOnDevice.h"

namespace at::native::openreg {
namespace {

// A boolean mask (True: attend) as the additive mask the CPU's fused kernel takes, as
// scaled_dot_product_attention converts it.
std::optional<Tensor> additive_mask(const std::optional<Tensor>& mask,
                                    const c10::TensorOptions& options) {
  if (!mask.has_value() || !mask->defined() || mask->scalar_type() != at::kBool) {
    return mask;
  }
  return at::where(*mask, at::zeros({}, options),
                   at::full({}, -std::numeric_limits<double>::infinity(), options));
}

// Unbatched (3-D) inputs run as a batch of one, as PyTorch's fused backends take them
// (masks with fewer dimensions broadcast as they are).
Tensor batched(const Tensor& tensor, bool unbatched) {
  return unbatched && tensor.dim() == 3 ? tensor.unsqueeze(0) : tensor;
}

std::optional<Tensor> batched(const std::optional<Tensor>& tensor, bool unbatched) {
  return tensor.has_value() && tensor->defined() ? std::optional<Tensor>(batched(*tensor, unbatched))
                                                 : tensor;
}

// `result` in the layout of `like` (same shape), as the operator's meta functions
// allocate it (empty_like of the query, key, value): torch.compile plans buffers by it.
Tensor laid_out_like(const Tensor& result, const Tensor& like) {
  if (result.sizes() != like.sizes() || result.strides() == like.strides()) {
    return result;
  }
  Tensor laid_out = at::empty_like(like);
  laid_out.copy_(result);
  return laid_out;
}

// DOC START: fused-kernel-constraints
// What the CPU's fused kernel takes, from the checks PyTorch's CPU chooser makes (its
// headers): dense 4-D inputs of one floating dtype with equal head dims and unit last
// stride, no dropout, batch and heads that match or group (GQA), non-empty sequences,
// and a broadcastable mask that needs no gradient. Asked only when the user disabled the
// CPU's flash backend but kept openreg's (sdpa_kernel(SDPBackend.OVERRIDEABLE)): otherwise
// the CPU's chooser answers, whatever its version accepts.
bool fused_kernel_accepts(const sdp::sdp_params& params) {
  constexpr bool debug = false;
  constexpr auto dtypes = std::array<c10::ScalarType, 4>{at::kFloat, at::kDouble,
                                                         at::kBFloat16, at::kHalf};
  return sdp::has_only_dense_inputs(params) && sdp::check_for_dropout(params, debug) &&
         sdp::check_tensor_shapes(params, debug) &&
         sdp::check_batch_size_and_num_heads_dense</*supports_gqa=*/true>(params, debug) &&
         sdp::check_attn_mask_shape(params, debug) &&
         params.query.sym_size(-1) == params.key.sym_size(-1) &&
         params.query.sym_size(-1) == params.value.sym_size(-1) &&
         sdp::check_nonzero_sequence_lengths_dense(params, debug) &&
         sdp::check_last_dim_stride_equals_1_dense</*ignore_singleton_dim=*/false>(params,
                                                                                   debug) &&
         sdp::check_tensor_dtype(params, dtypes, debug);
}
// DOC END: fused-kernel-constraints

// Whether a torch.func transform (vmap, grad, jvp, ...) is running: functorch keeps its
// dynamic-layer keys in the thread's included set while its layer stack is not empty.
// Under vmap the overrideable kernel cannot run: it has no batching rule (functorch has
// them for CUDA's flash, efficient and cuDNN kernels only) and vmap's generic fallback
// refuses it because it returns SymInts. Whether a vmap layer lies below the transform
// that hands over the tensors (vmap(grad(f)) passes grad wrappers) is recorded only in
// functorch's interpreter stack, whose headers need a JSON library the wheel lacks; so
// every transform takes the math path, which is batched and differentiated op by op.
bool in_functorch_transform() {
  return c10::impl::tls_is_dispatch_key_included(
      c10::DispatchKey::FuncTorchDynamicLayerFrontMode);
}

} // namespace

// DOC START: sdp-choice
int64_t fused_sdp_choice(const Tensor& query, const Tensor& key, const Tensor& value,
                         const std::optional<Tensor>& attn_mask, double dropout_p,
                         bool is_causal, std::optional<double> scale, bool enable_gqa) {
  // The choice reads only metadata (shapes, strides, dtypes, flags, which inputs require
  // grad), never values. Where the CPU's chooser would run its fused (flash) kernel,
  // openreg runs that kernel as its overrideable backend (below); any other answer
  // (math, or flash if the user disabled OVERRIDEABLE) stands. The CPU's chooser is
  // called directly, not through the dispatcher, so it also answers for the fake tensors
  // of torch.compile, symbolic shapes included.
  if (in_functorch_transform()) {
    return static_cast<int64_t>(at::SDPBackend::math);
  }
  const sdp::sdp_params params{query, key, value, attn_mask, dropout_p, is_causal, enable_gqa};
  const bool overrideable = at::globalContext().userEnabledOverrideableSDP();
  if (overrideable && !at::globalContext().userEnabledFlashSDP() &&
      fused_kernel_accepts(params)) {
    return static_cast<int64_t>(at::SDPBackend::overrideable);
  }
  const int64_t cpu_choice = at::native::_fused_sdp_choice_cpp(
      query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa);
  if (overrideable && cpu_choice == static_cast<int64_t>(at::SDPBackend::flash_attention)) {
    return static_cast<int64_t>(at::SDPBackend::overrideable);
  }
  return cpu_choice;
}
// DOC END: sdp-choice

// DOC START: fused-attention-overrideable
std::tuple<Tensor, Tensor, Tensor, Tensor, c10::SymInt, c10::SymInt, Tensor, Tensor, Tensor>
scaled_dot_product_fused_attention_overrideable(
    const Tensor& query, const Tensor& key, const Tensor& value,
    const std::optional<Tensor>& attn_bias, double dropout_p, bool is_causal,
    bool return_debug_mask, std::optional<double> scale) {
  // The CPU's fused kernel has no dropout: the choice sends dropout to the math path.
  TORCH_CHECK(dropout_p == 0.0, "openreg: _scaled_dot_product_fused_attention_overrideable "
              "supports no dropout (got dropout_p=", dropout_p, "); scaled_dot_product_attention "
              "runs attention with dropout by the math path");
  TORCH_CHECK(!return_debug_mask, "openreg: _scaled_dot_product_fused_attention_overrideable "
              "has no debug attention mask");
  const bool unbatched = query.dim() == 3 && key.dim() == 3 && value.dim() == 3;
  TORCH_CHECK(unbatched || (query.dim() == 4 && key.dim() == 4 && value.dim() == 4),
              "openreg: _scaled_dot_product_fused_attention_overrideable expects query, key and "
              "value of 4 dimensions (batch, heads, sequence, head dim) or 3 (no batch), got ",
              query.sizes(), ", ", key.sizes(), " and ", value.sizes());
  auto [output, logsumexp] = run_on_device<std::tuple<Tensor, Tensor>>(
      "aten::_scaled_dot_product_fused_attention_overrideable",
      [&](const Tensor& q, const Tensor& k, const Tensor& v, const std::optional<Tensor>& mask) {
        auto [out, lse] = at::_scaled_dot_product_flash_attention_for_cpu(
            batched(q, unbatched), batched(k, unbatched), batched(v, unbatched),
            /*dropout_p=*/0.0, is_causal, additive_mask(batched(mask, unbatched), q.options()),
            scale);
        // The operator's logsumexp is (batch, heads, query length), laid out contiguous
        // (its meta function says so; torch.compile plans buffers by it), batch 1 for
        // unbatched inputs.
        return std::make_tuple(unbatched ? out.squeeze(0) : laid_out_like(out, q),
                               lse.contiguous());
      },
      query, key, value, attn_bias);
  // No RNG state: the kernel has no dropout (0-dim, as the meta function's).
  const auto rng_state = [&] { return at::zeros({}, query.options().dtype(at::kLong)); };
  return {std::move(output), std::move(logsumexp), Tensor(), Tensor(), query.sym_size(-2),
          key.sym_size(-2), rng_state(), rng_state(), Tensor()};
}
// DOC END: fused-attention-overrideable

std::tuple<Tensor, Tensor, Tensor, Tensor>
scaled_dot_product_fused_attention_overrideable_backward(
    const Tensor& grad_out, const Tensor& query, const Tensor& key, const Tensor& value,
    const Tensor& attn_bias, std::array<bool, 4> grad_input_mask, const Tensor& out,
    const Tensor& logsumexp, const Tensor& /*cum_seq_q*/, const Tensor& /*cum_seq_k*/,
    c10::SymInt /*max_q*/, c10::SymInt /*max_k*/, double dropout_p, bool is_causal,
    const Tensor& /*philox_seed*/, const Tensor& /*philox_offset*/,
    std::optional<double> scale) {
  TORCH_CHECK(dropout_p == 0.0, "openreg: _scaled_dot_product_fused_attention_overrideable_"
              "backward supports no dropout (got dropout_p=", dropout_p, ")");
  TORCH_CHECK(!(grad_input_mask[3] && attn_bias.defined()),
              "openreg: _scaled_dot_product_fused_attention_overrideable_backward computes no "
              "gradient for attn_bias (scaled_dot_product_attention sends a mask that requires "
              "grad to the math path)");
  const std::optional<Tensor> mask =
      attn_bias.defined() ? std::optional<Tensor>(attn_bias) : std::nullopt;
  const bool unbatched = query.dim() == 3;
  auto [grad_query, grad_key, grad_value] = run_on_device<std::tuple<Tensor, Tensor, Tensor>>(
      "aten::_scaled_dot_product_fused_attention_overrideable_backward",
      [&](const Tensor& grad, const Tensor& q, const Tensor& k, const Tensor& v,
          const Tensor& o, const Tensor& lse, const std::optional<Tensor>& bias) {
        auto grads = at::_scaled_dot_product_flash_attention_for_cpu_backward(
            batched(grad, unbatched), batched(q, unbatched), batched(k, unbatched),
            batched(v, unbatched), batched(o, unbatched), lse, /*dropout_p=*/0.0, is_causal,
            additive_mask(batched(bias, unbatched), q.options()), scale);
        if (unbatched) {
          return std::make_tuple(std::get<0>(grads).squeeze(0), std::get<1>(grads).squeeze(0),
                                 std::get<2>(grads).squeeze(0));
        }
        return std::make_tuple(laid_out_like(std::get<0>(grads), q),
                               laid_out_like(std::get<1>(grads), k),
                               laid_out_like(std::get<2>(grads), v));
      },
      grad_out, query, key, value, out, logsumexp, mask);
  return {std::move(grad_query), std::move(grad_key), std::move(grad_value), Tensor()};
}

} // namespace at::native::openreg
