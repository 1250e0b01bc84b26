#pragma once

// The batch-norm pieces SyncBatchNorm calls on accelerators (Normalization.cu's twins):
// CUDA-only operators, so the fallback has no CPU kernel to run. Statistics are kept in
// float for half and bfloat16 inputs, as CUDA keeps them.

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace at::native::openreg {

// This rank's per-channel mean and 1 / sqrt(biased variance + eps).
std::tuple<at::Tensor, at::Tensor> batch_norm_stats(const at::Tensor& input, double eps);

// All ranks' statistics (one row per rank) combined by their element counts; updates the
// running statistics in place (the running variance unbiased), as CUDA's kernel does.
std::tuple<at::Tensor, at::Tensor> batch_norm_gather_stats_with_counts(
    const at::Tensor& input, const at::Tensor& mean, const at::Tensor& invstd,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    double momentum, double eps, const at::Tensor& counts);

// The same with one count for every rank.
std::tuple<at::Tensor, at::Tensor> batch_norm_gather_stats(
    const at::Tensor& input, const at::Tensor& mean, const at::Tensor& invstd,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    double momentum, double eps, int64_t count);

// (input - mean) * invstd * weight + bias.
at::Tensor batch_norm_elemt(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                            const std::optional<at::Tensor>& bias, const at::Tensor& mean,
                            const at::Tensor& invstd, double eps);

// Per channel: sum(dy), sum(dy * (x - mean)), and the weight's and bias's gradients; each
// only when asked for (undefined otherwise).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> batch_norm_backward_reduce(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& mean,
    const at::Tensor& invstd, const std::optional<at::Tensor>& weight, bool input_g,
    bool weight_g, bool bias_g);

// The input's gradient from the all-reduced sums and every rank's element count.
at::Tensor batch_norm_backward_elemt(const at::Tensor& grad_out, const at::Tensor& input,
                                     const at::Tensor& mean, const at::Tensor& invstd,
                                     const std::optional<at::Tensor>& weight,
                                     const at::Tensor& sum_dy, const at::Tensor& sum_dy_xmu,
                                     const at::Tensor& count);

} // namespace at::native::openreg
