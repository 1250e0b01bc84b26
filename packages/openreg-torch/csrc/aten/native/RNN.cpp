#include "aten/native/RNN.h"

#include <ATen/Context.h>
#include <ATen/TensorOperators.h>
#include <ATen/native/RNN.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/lstm_native.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/zeros_like.h>

#include <algorithm>

#include "execution/RunOnDevice.h"

namespace at::native::openreg {
namespace {

// The shape checks CUDA's fused cells make, with openreg's wording.
void check_cell(const char* op, const Tensor& input_gates, const Tensor& hidden_gates,
                const Tensor& state, const std::optional<Tensor>& input_bias,
                const std::optional<Tensor>& hidden_bias, int64_t gates) {
  TORCH_CHECK(input_gates.dim() == 2 && input_gates.sizes() == hidden_gates.sizes(),
              "openreg: ", op, " expects 2-D input_gates and hidden_gates of one shape, got ",
              input_gates.sizes(), " and ", hidden_gates.sizes());
  TORCH_CHECK(state.dim() == 2 && input_gates.size(0) == state.size(0) &&
                  input_gates.size(1) == gates * state.size(1),
              "openreg: ", op, " expects gates of shape [batch, ", gates,
              " * hidden] for a state of shape [batch, hidden], got gates ",
              input_gates.sizes(), " and state ", state.sizes());
  const bool has_input_bias = input_bias.has_value() && input_bias->defined();
  const bool has_hidden_bias = hidden_bias.has_value() && hidden_bias->defined();
  TORCH_CHECK(has_input_bias == has_hidden_bias, "openreg: ", op,
              " expects both biases or neither");
  if (has_input_bias) {
    TORCH_CHECK(input_bias->dim() == 1 && input_bias->size(0) == input_gates.size(1) &&
                    hidden_bias->sizes() == input_bias->sizes(),
                "openreg: ", op, " expects biases of shape [", input_gates.size(1), "], got ",
                input_bias->sizes(), " and ", hidden_bias->sizes());
  }
}

// gates + bias, as the CPU's linear adds the bias to its product.
Tensor with_bias(const Tensor& gates, const std::optional<Tensor>& bias) {
  return bias.has_value() && bias->defined() ? gates + *bias : gates;
}

// d(sigmoid)/dx and d(tanh)/dx from the activations' values, as their backward kernels.
Tensor sigmoid_grad(const Tensor& grad, const Tensor& y) {
  return grad * (1 - y) * y;
}
Tensor tanh_grad(const Tensor& grad, const Tensor& y) {
  return grad * (1 - y * y);
}

// The CPU's test for its oneDNN LSTM (use_mkldnn and the projection check in ATen's
// RNN.cpp), asked of openreg tensors: all dense on the input's device, float32 (the
// CPU's bfloat16 and half cases depend on its own instruction set checks: left to the
// composite), no projections, concrete sizes.
bool takes_onednn_lstm(const Tensor& input, TensorList hx, TensorList params) {
  if (!at::globalContext().userEnabledMkldnn() || input.scalar_type() != kFloat ||
      input.numel() == 0 || hx.size() != 2 || hx[0].dim() != 3 || hx[1].dim() != 3 ||
      hx[0].size(2) != hx[1].size(2) ||
      hx[0].unsafeGetTensorImpl()->has_symbolic_sizes_strides()) {
    return false;
  }
  const auto on_input_device = [&](const Tensor& tensor) {
    return tensor.defined() && tensor.layout() == kStrided &&
           tensor.device() == input.device();
  };
  return on_input_device(input) && std::all_of(hx.begin(), hx.end(), on_input_device) &&
         std::all_of(params.begin(), params.end(), on_input_device);
}

} // namespace

// DOC START: onednn-lstm
std::tuple<Tensor, Tensor, Tensor> lstm(const Tensor& input, TensorList hx, TensorList params,
                                        bool has_biases, int64_t num_layers, double dropout,
                                        bool train, bool bidirectional, bool batch_first) {
  // The CPU's kernel of the stub (its DispatchStub's call is not exported; the kernel
  // pointer is, and is null in a build without oneDNN).
  const auto onednn_lstm = at::native::lstm_mkldnn_stub_DECLARE_DISPATCH_type::DEFAULT;
  if (onednn_lstm == nullptr || !takes_onednn_lstm(input, hx, params)) {
    return at::native::lstm(input, hx, params, has_biases, num_layers, dropout, train,
                            bidirectional, batch_first);
  }
  // Called with openreg tensors: its tensor operations dispatch to openreg like any
  // caller's, so each layer is one aten::mkldnn_rnn_layer on the device.
  Tensor output, hy, cy;
  onednn_lstm(output, hy, cy, input, hx, params, has_biases, num_layers, dropout, train,
              bidirectional, batch_first);
  return std::make_tuple(std::move(output), std::move(hy), std::move(cy));
}
// DOC END: onednn-lstm

// DOC START: fused-lstm-cell
std::tuple<Tensor, Tensor, Tensor> thnn_fused_lstm_cell(
    const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& cx,
    const std::optional<Tensor>& input_bias, const std::optional<Tensor>& hidden_bias) {
  check_cell("_thnn_fused_lstm_cell", input_gates, hidden_gates, cx, input_bias, hidden_bias, 4);
  return run_on_device<std::tuple<Tensor, Tensor, Tensor>>(
      "aten::_thnn_fused_lstm_cell",
      [](const Tensor& igates, const Tensor& hgates, const Tensor& c,
         const std::optional<Tensor>& b_ih, const std::optional<Tensor>& b_hh) {
        // The CPU's LSTMCell: linear_hh(hx) + linear_ih(input), then the activations
        // (in place on the fresh sum, never on the inputs).
        const Tensor gates = with_bias(hgates, b_hh) + with_bias(igates, b_ih);
        const auto chunks = gates.unsafe_chunk(4, 1);
        const Tensor ingate = chunks[0].sigmoid_();
        const Tensor forgetgate = chunks[1].sigmoid_();
        const Tensor cellgate = chunks[2].tanh_();
        const Tensor outgate = chunks[3].sigmoid_();
        Tensor cy = (forgetgate * c).add_(ingate * cellgate);
        Tensor hy = outgate * cy.tanh();
        // The chunks were activated in place: `gates` is the workspace [i, f, g, o].
        return std::make_tuple(std::move(hy), std::move(cy), gates);
      },
      input_gates, hidden_gates, cx, input_bias, hidden_bias);
}
// DOC END: fused-lstm-cell

std::tuple<Tensor, Tensor, Tensor> thnn_fused_lstm_cell_backward_impl(
    const std::optional<Tensor>& grad_hy, const std::optional<Tensor>& grad_cy,
    const Tensor& cx, const Tensor& cy, const Tensor& workspace, bool has_bias) {
  const bool hy_defined = grad_hy.has_value() && grad_hy->defined();
  const bool cy_defined = grad_cy.has_value() && grad_cy->defined();
  if (!hy_defined && !cy_defined) {
    return {};  // no gradient flows (as CUDA's kernel answers)
  }
  TORCH_CHECK(workspace.dim() == 2 && workspace.sizes() == c10::IntArrayRef(
                  {cx.size(0), 4 * cx.size(1)}),
              "openreg: _thnn_fused_lstm_cell_backward_impl expects a workspace of shape [",
              cx.size(0), ", ", 4 * cx.size(1), "], got ", workspace.sizes());
  return run_on_device<std::tuple<Tensor, Tensor, Tensor>>(
      "aten::_thnn_fused_lstm_cell_backward_impl",
      [&](const std::optional<Tensor>& ghy, const std::optional<Tensor>& gcy, const Tensor& c,
          const Tensor& c_next, const Tensor& gates) {
        const auto chunks = gates.unsafe_chunk(4, 1);
        const Tensor& ingate = chunks[0];
        const Tensor& forgetgate = chunks[1];
        const Tensor& cellgate = chunks[2];
        const Tensor& outgate = chunks[3];
        const Tensor tanh_cy = c_next.tanh();
        // hy = o * tanh(cy); cy = f * cx + i * g.
        Tensor grad_c = hy_defined ? tanh_grad(*ghy * outgate, tanh_cy) : at::zeros_like(c);
        if (cy_defined) {
          grad_c = grad_c + *gcy;
        }
        const Tensor grad_outgate = hy_defined ? sigmoid_grad(*ghy * tanh_cy, outgate)
                                               : at::zeros_like(outgate);
        const Tensor grad_ingate = sigmoid_grad(grad_c * cellgate, ingate);
        const Tensor grad_forgetgate = sigmoid_grad(grad_c * c, forgetgate);
        const Tensor grad_cellgate = tanh_grad(grad_c * ingate, cellgate);
        Tensor grad_gates = at::cat({grad_ingate, grad_forgetgate, grad_cellgate, grad_outgate}, 1);
        Tensor grad_cx = grad_c * forgetgate;
        Tensor grad_bias = has_bias ? grad_gates.sum(0) : Tensor();
        return std::make_tuple(std::move(grad_gates), std::move(grad_cx), std::move(grad_bias));
      },
      grad_hy, grad_cy, cx, cy, workspace);
}

std::tuple<Tensor, Tensor> thnn_fused_gru_cell(
    const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& hx,
    const std::optional<Tensor>& input_bias, const std::optional<Tensor>& hidden_bias) {
  check_cell("_thnn_fused_gru_cell", input_gates, hidden_gates, hx, input_bias, hidden_bias, 3);
  return run_on_device<std::tuple<Tensor, Tensor>>(
      "aten::_thnn_fused_gru_cell",
      [](const Tensor& igates, const Tensor& hgates, const Tensor& h,
         const std::optional<Tensor>& b_ih, const std::optional<Tensor>& b_hh) {
        // The CPU's GRUCell, step by step.
        const auto input_chunks = with_bias(igates, b_ih).unsafe_chunk(3, 1);
        const auto hidden_chunks = with_bias(hgates, b_hh).unsafe_chunk(3, 1);
        const Tensor resetgate = (hidden_chunks[0] + input_chunks[0]).sigmoid_();
        const Tensor inputgate = (hidden_chunks[1] + input_chunks[1]).sigmoid_();
        const Tensor& hidden_new = hidden_chunks[2];  // hn, with its bias
        const Tensor newgate = input_chunks[2].add(hidden_new * resetgate).tanh_();
        Tensor hy = (h - newgate).mul_(inputgate).add_(newgate);
        Tensor workspace = at::cat({resetgate, inputgate, newgate, h, hidden_new}, 1);
        return std::make_tuple(std::move(hy), std::move(workspace));
      },
      input_gates, hidden_gates, hx, input_bias, hidden_bias);
}

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> thnn_fused_gru_cell_backward(
    const Tensor& grad_hy, const Tensor& workspace, bool has_bias) {
  TORCH_CHECK(grad_hy.dim() == 2 && workspace.dim() == 2 &&
                  workspace.size(0) == grad_hy.size(0) &&
                  workspace.size(1) == 5 * grad_hy.size(1),
              "openreg: _thnn_fused_gru_cell_backward expects a workspace of shape [batch, 5 * "
              "hidden] for grad_hy of shape [batch, hidden], got ", workspace.sizes(), " and ",
              grad_hy.sizes());
  return run_on_device<std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor>>(
      "aten::_thnn_fused_gru_cell_backward",
      [&](const Tensor& ghy, const Tensor& saved) {
        const auto chunks = saved.unsafe_chunk(5, 1);
        const Tensor& resetgate = chunks[0];
        const Tensor& inputgate = chunks[1];
        const Tensor& newgate = chunks[2];
        const Tensor& hx = chunks[3];
        const Tensor& hidden_new = chunks[4];
        // hy = (hx - n) * z + n; n = tanh(in + r * hn); r, z = sigmoid(...).
        Tensor grad_hx = ghy * inputgate;
        const Tensor grad_inputgate = sigmoid_grad(ghy * (hx - newgate), inputgate);
        const Tensor grad_new = tanh_grad(ghy - ghy * inputgate, newgate);
        const Tensor grad_resetgate = sigmoid_grad(grad_new * hidden_new, resetgate);
        Tensor grad_input_gates = at::cat({grad_resetgate, grad_inputgate, grad_new}, 1);
        Tensor grad_hidden_gates =
            at::cat({grad_resetgate, grad_inputgate, grad_new * resetgate}, 1);
        Tensor grad_input_bias = has_bias ? grad_input_gates.sum(0) : Tensor();
        Tensor grad_hidden_bias = has_bias ? grad_hidden_gates.sum(0) : Tensor();
        return std::make_tuple(std::move(grad_input_gates), std::move(grad_hidden_gates),
                               std::move(grad_hx), std::move(grad_input_bias),
                               std::move(grad_hidden_bias));
      },
      grad_hy, workspace);
}

} // namespace at::native::openreg
