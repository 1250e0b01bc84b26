#pragma once

// Recurrent layers on openreg. A whole-sequence LSTM takes the CPU's own route where
// the CPU would: its oneDNN layers (lstm). Everything else runs ATen's step-by-step
// implementation, which calls the fused cells below for PrivateUse1 inputs (the branch
// CUDA and XPU take). PyTorch has CUDA kernels for the cells only; openreg computes the
// same gate formulas with the CPU's operators on kernel views, in the order the CPU's
// unfused cells use, so results match the CPU's.

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <optional>
#include <tuple>

namespace at::native::openreg {

// aten::lstm.input (for PrivateUse1 and AutogradPrivateUse1): each layer one
// aten::mkldnn_rnn_layer, run by the fallback on kernel views, where the CPU would take
// that route; PyTorch's composite otherwise.
std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm(
    const at::Tensor& input, at::TensorList hx, at::TensorList params, bool has_biases,
    int64_t num_layers, double dropout, bool train, bool bidirectional, bool batch_first);

// Returns (hy, cy, workspace); the workspace holds the activated gates [i, f, g, o].
std::tuple<at::Tensor, at::Tensor, at::Tensor> thnn_fused_lstm_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias);

// Returns (grad_gates, grad_cx, grad_bias); grad_bias is undefined without biases.
std::tuple<at::Tensor, at::Tensor, at::Tensor> thnn_fused_lstm_cell_backward_impl(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy,
    const at::Tensor& cx, const at::Tensor& cy, const at::Tensor& workspace, bool has_bias);

// Returns (hy, workspace); the workspace holds [r, z, n, hx, hn] (hn with its bias).
std::tuple<at::Tensor, at::Tensor> thnn_fused_gru_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& hx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias);

// Returns (grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias,
// grad_hidden_bias); the bias gradients are undefined without biases.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>
thnn_fused_gru_cell_backward(const at::Tensor& grad_hy, const at::Tensor& workspace,
                             bool has_bias);

} // namespace at::native::openreg
