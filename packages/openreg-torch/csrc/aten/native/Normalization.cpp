#include "aten/native/Normalization.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/full.h>
#include <ATen/ops/var_mean.h>

#include <vector>

namespace at::native::openreg {
namespace {

at::ScalarType stats_dtype(const Tensor& input) {
  const at::ScalarType type = input.scalar_type();
  return (type == at::kHalf || type == at::kBFloat16) ? at::kFloat : type;
}

// Every dimension but the channels (dimension 1).
std::vector<int64_t> reduced_dims(const Tensor& input) {
  std::vector<int64_t> dims{0};
  for (int64_t dim = 2; dim < input.dim(); ++dim) {
    dims.push_back(dim);
  }
  return dims;
}

// Per-channel values shaped to broadcast over `input`: (1, C, 1, ...).
Tensor per_channel(const Tensor& values, const Tensor& input) {
  std::vector<int64_t> shape(input.dim(), 1);
  shape[1] = values.numel();
  return values.reshape(shape);
}

// invstd, times the weight when there is one: the per-channel factor of the normalization.
Tensor scale_of(const Tensor& invstd, const std::optional<Tensor>& weight) {
  return weight.has_value() && weight->defined() ? invstd * *weight : invstd;
}

// x - mean, in the statistics' dtype.
Tensor centered(const Tensor& input, const Tensor& mean) {
  return input.to(mean.scalar_type()) - per_channel(mean, input);
}

void check_input(const Tensor& input, const char* op) {
  TORCH_CHECK(input.dim() >= 2, op, ": expected an input with a channel dimension (at least 2 "
              "dimensions), got ", input.dim());
}

} // namespace

// DOC START: sync-batch-norm
std::tuple<Tensor, Tensor> batch_norm_stats(const Tensor& input, double eps) {
  check_input(input, "batch_norm_stats");
  auto [var, mean] = at::var_mean(input.to(stats_dtype(input)), reduced_dims(input),
                                  /*correction=*/0, /*keepdim=*/false);
  return {mean, (var + eps).rsqrt()};
}

std::tuple<Tensor, Tensor> batch_norm_gather_stats_with_counts(
    const Tensor& input, const Tensor& mean, const Tensor& invstd,
    const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
    double momentum, double eps, const Tensor& counts) {
  check_input(input, "batch_norm_gather_stats_with_counts");
  // Each rank's (count, mean, biased variance), combined as Chan et al.'s parallel
  // variance: the total of each rank's squared deviations from the global mean.
  const Tensor count = counts.to(mean.scalar_type()).reshape({-1, 1});
  const Tensor total = count.sum(0);
  const Tensor global_mean = (count * mean).sum(0) / total;
  const Tensor rank_var = invstd.pow(-2) - eps;
  const Tensor var = (count * (rank_var + (mean - global_mean).pow(2))).sum(0) / total;
  if (running_mean.has_value() && running_mean->defined()) {
    running_mean->mul_(1 - momentum).add_(global_mean.to(running_mean->scalar_type()), momentum);
  }
  if (running_var.has_value() && running_var->defined()) {
    const Tensor unbiased = var * total / (total - 1);
    running_var->mul_(1 - momentum).add_(unbiased.to(running_var->scalar_type()), momentum);
  }
  return {global_mean, (var + eps).rsqrt()};
}

Tensor batch_norm_elemt(const Tensor& input, const std::optional<Tensor>& weight,
                        const std::optional<Tensor>& bias, const Tensor& mean,
                        const Tensor& invstd, double /*eps*/) {
  check_input(input, "batch_norm_elemt");
  Tensor out = centered(input, mean) * per_channel(scale_of(invstd, weight), input);
  if (bias.has_value() && bias->defined()) {
    out = out + per_channel(*bias, input);
  }
  return out.to(input.scalar_type());
}

std::tuple<Tensor, Tensor, Tensor, Tensor> batch_norm_backward_reduce(
    const Tensor& grad_out, const Tensor& input, const Tensor& mean, const Tensor& invstd,
    const std::optional<Tensor>& weight, bool input_g, bool weight_g, bool bias_g) {
  check_input(input, "batch_norm_backward_reduce");
  const std::vector<int64_t> dims = reduced_dims(input);
  const Tensor dy = grad_out.to(mean.scalar_type());
  const Tensor sum_dy = dy.sum(dims);
  const Tensor sum_dy_xmu = (dy * centered(input, mean)).sum(dims);
  const bool has_weight = weight.has_value() && weight->defined();
  const at::ScalarType grad_dtype = has_weight ? weight->scalar_type() : mean.scalar_type();
  return {input_g ? sum_dy : Tensor(), input_g ? sum_dy_xmu : Tensor(),
          weight_g ? (sum_dy_xmu * invstd).to(grad_dtype) : Tensor(),
          bias_g ? sum_dy.to(grad_dtype) : Tensor()};
}

Tensor batch_norm_backward_elemt(const Tensor& grad_out, const Tensor& input, const Tensor& mean,
                                 const Tensor& invstd, const std::optional<Tensor>& weight,
                                 const Tensor& sum_dy, const Tensor& sum_dy_xmu,
                                 const Tensor& count) {
  check_input(input, "batch_norm_backward_elemt");
  const Tensor total = count.sum().to(mean.scalar_type());
  const Tensor mean_dy = sum_dy / total;
  const Tensor mean_dy_xmu = sum_dy_xmu / total;
  const Tensor grad = (grad_out.to(mean.scalar_type()) - per_channel(mean_dy, input) -
                       centered(input, mean) * per_channel(invstd * invstd * mean_dy_xmu, input)) *
                      per_channel(scale_of(invstd, weight), input);
  return grad.to(input.scalar_type());
}
// DOC END: sync-batch-norm

std::tuple<Tensor, Tensor> batch_norm_gather_stats(
    const Tensor& input, const Tensor& mean, const Tensor& invstd,
    const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
    double momentum, double eps, int64_t count) {
  const Tensor counts = at::full({mean.size(0)}, count, mean.options());
  return openreg::batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean,
                                                      running_var, momentum, eps, counts);
}

} // namespace at::native::openreg
