#pragma once

// The fused RNN cells ATen calls for LSTM, GRU, LSTMCell and GRUCell whenever the input
// is a PrivateUse1 tensor (the branch CUDA and XPU take). PyTorch has CUDA kernels for
// them only; openreg computes the same gate formulas with the CPU's operators on kernel
// views, in the order the CPU's unfused cells use, so results match the CPU's.

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace at::native::openreg {

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
