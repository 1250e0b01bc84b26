"""LSTM, GRU and their cells on openreg. A float32 LSTM over whole sequences runs the CPU's
oneDNN layers (aten::mkldnn_rnn_layer) as the CPU does; everything else goes through the
fused cell operators (_thnn_fused_lstm_cell, _thnn_fused_gru_cell and their backward) that
ATen calls for PrivateUse1 inputs, which openreg implements (native/RNN.cpp). Every case
trains on openreg and on the CPU from the same seed and compares outputs, final states,
losses, parameters and gradients."""

import pytest
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

from openreg_torch.fallback import route_of
from openreg_torch.testing import assert_matches_cpu


def train(device, make_module, make_inputs, loss_of, steps=3):
    torch.manual_seed(0)
    module = make_module().to(device)
    inputs = make_inputs(device)
    optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
    torch.manual_seed(1)  # dropout draws from the same generator state on either device
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        outputs = module(*inputs)
        loss = loss_of(outputs)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return module, torch.stack(losses), outputs


def assert_trains_like_cpu(make_module, make_inputs, loss_of):
    cpu_module, cpu_losses, cpu_outputs = train("cpu", make_module, make_inputs, loss_of)
    module, losses, outputs = train("openreg", make_module, make_inputs, loss_of)
    assert losses.device.type == "openreg"
    torch.testing.assert_close(losses.cpu(), cpu_losses)
    for actual, expected in zip(torch.utils._pytree.tree_leaves(outputs),
                                torch.utils._pytree.tree_leaves(cpu_outputs)):
        if actual is None:  # a PackedSequence's sorted_indices, with enforce_sorted
            assert expected is None
            continue
        # (a PackedSequence's batch_sizes stay on the CPU, as on CUDA)
        assert actual.device.type == ("openreg" if actual.is_floating_point() else "cpu")
        torch.testing.assert_close(actual.detach().cpu(), expected.detach())
    for (name, param), cpu_param in zip(module.named_parameters(), cpu_module.parameters()):
        torch.testing.assert_close(param.detach().cpu(), cpu_param.detach(), msg=name)
        torch.testing.assert_close(param.grad.cpu(), cpu_param.grad, msg=name)


def sequence(device, length=5, batch=3, features=6):
    return torch.randn(length, batch, features, generator=torch.Generator().manual_seed(2)).to(device)


def output_and_state_loss(outputs):
    output, state = outputs
    states = state if isinstance(state, tuple) else (state,)
    return output.pow(2).mean() + sum(s.sum() for s in states)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_stacked_bidirectional_with_dropout_trains_like_cpu(kind):
    assert_trains_like_cpu(
        lambda: getattr(nn, kind)(6, 8, num_layers=3, bidirectional=True, dropout=0.3),
        lambda device: (sequence(device),), output_and_state_loss)


def test_lstm_with_projections_and_initial_state_trains_like_cpu():
    def inputs(device):
        generator = torch.Generator().manual_seed(3)
        h0, c0 = torch.randn(2, 3, 4, generator=generator), torch.randn(2, 3, 8, generator=generator)
        return sequence(device).transpose(0, 1), (h0.to(device), c0.to(device))

    assert_trains_like_cpu(lambda: nn.LSTM(6, 8, num_layers=2, proj_size=4, batch_first=True),
                           inputs, output_and_state_loss)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_packed_sequences_without_bias_train_like_cpu(kind):
    def inputs(device):
        padded = sequence(device, length=6, batch=4)
        lengths = torch.tensor([6, 4, 3, 1])  # lengths stay on the CPU
        return (nn.utils.rnn.pack_padded_sequence(padded, lengths, enforce_sorted=True),)

    def loss(outputs):
        packed, state = outputs
        padded, _ = nn.utils.rnn.pad_packed_sequence(packed)
        return output_and_state_loss((padded, state))

    assert_trains_like_cpu(lambda: getattr(nn, kind)(6, 8, bias=False, bidirectional=True),
                           inputs, loss)


@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell"])
def test_cells_unrolled_train_like_cpu(kind):
    class Unrolled(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = getattr(nn, kind)(6, 8)

        def forward(self, steps):
            state = None
            outputs = []
            for step in steps:
                state = self.cell(step, state)
                # The LSTM's cell state feeds only the next step: the last step's cy
                # gets no gradient (the backward's optional grad_cy is undefined).
                outputs.append(state[0] if isinstance(state, tuple) else state)
            return torch.stack(outputs)

    assert_trains_like_cpu(Unrolled, lambda device: (sequence(device),),
                           lambda output: output.pow(2).sum())


def test_lstm_cell_gradient_through_the_cell_state_only():
    # The loss reads cy alone: the backward gets grad_cy and an undefined grad_hy.
    class CellState(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = nn.LSTMCell(6, 8)

        def forward(self, x):
            return self.cell(x)[1]

    assert_trains_like_cpu(CellState, lambda device: (sequence(device)[0],),
                           lambda cell_state: cell_state.pow(2).sum())


def operators_run(step):
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    return {event.name for event in prof.events()}


def test_lstm_runs_the_cpus_onednn_layers_bit_for_bit():
    # The CPU runs this LSTM as oneDNN layers: so does openreg, with the same results to
    # the bit in training (forward and backward) and in inference.
    torch.manual_seed(0)
    cpu_lstm = nn.LSTM(6, 8, num_layers=2, batch_first=True)
    lstm = nn.LSTM(6, 8, num_layers=2, batch_first=True).to("openreg")
    lstm.load_state_dict(cpu_lstm.state_dict())
    x = sequence("cpu").transpose(0, 1)
    results = {}
    for device, module in (("cpu", cpu_lstm), ("openreg", lstm)):
        def step():
            output, (hy, cy) = module(x.to(device))
            (output.pow(2).sum() + hy.sum() + cy.sum()).backward()
            results[device] = [output, hy, cy] + [p.grad for p in module.parameters()]

        ran = operators_run(step)
        assert {"aten::mkldnn_rnn_layer", "aten::mkldnn_rnn_layer_backward"} <= ran, device
        with torch.inference_mode():
            results[device].append(module(x.to(device))[0])
    for actual, expected in zip(results["openreg"], results["cpu"]):
        assert actual.device.type == "openreg"
        torch.testing.assert_close(actual.detach().cpu(), expected.detach(), rtol=0, atol=0)
    assert route_of("aten::lstm.input") == "own kernel"


def test_lstm_the_cpu_runs_step_by_step_takes_the_fused_cells():
    # Projections (and float64) are outside the CPU's oneDNN LSTM: ATen's step-by-step
    # route, through openreg's fused cells.
    for make in (lambda: nn.LSTM(6, 8, proj_size=4), lambda: nn.LSTM(6, 8).double()):
        lstm = make().to("openreg")
        x = sequence("openreg").to(next(lstm.parameters()).dtype)
        ran = operators_run(lambda: lstm(x)[0].sum().backward())
        assert "aten::_thnn_fused_lstm_cell" in ran and "aten::mkldnn_rnn_layer" not in ran


def test_fused_cells_are_openreg_kernels():
    for op in ["_thnn_fused_lstm_cell", "_thnn_fused_lstm_cell_backward_impl",
               "_thnn_fused_gru_cell", "_thnn_fused_gru_cell_backward"]:
        assert route_of(f"aten::{op}") == "own kernel", op


def test_fused_cells_match_the_unfused_formulas_in_float64():
    # The CPU has no fused cell: compare with the cells' formulas computed on the CPU.
    generator = torch.Generator().manual_seed(4)

    def randn(*shape):
        return torch.randn(*shape, generator=generator, dtype=torch.float64)

    igates, hgates, cx, b_ih, b_hh = randn(3, 8), randn(3, 8), randn(3, 2), randn(8), randn(8)
    hy, cy, workspace = torch.ops.aten._thnn_fused_lstm_cell(
        *(t.to("openreg") for t in (igates, hgates, cx, b_ih, b_hh)))
    i, f, g, o = (hgates + b_hh + igates + b_ih).chunk(4, 1)
    expected_cy = f.sigmoid() * cx + i.sigmoid() * g.tanh()
    torch.testing.assert_close(cy.cpu(), expected_cy)
    torch.testing.assert_close(hy.cpu(), o.sigmoid() * expected_cy.tanh())
    assert workspace.shape == (3, 8) and workspace.device.type == "openreg"

    igates, hgates, hx, b_ih, b_hh = randn(3, 6), randn(3, 6), randn(3, 2), randn(6), randn(6)
    hy, workspace = torch.ops.aten._thnn_fused_gru_cell(
        *(t.to("openreg") for t in (igates, hgates, hx, b_ih, b_hh)))
    ir, iz, in_ = (igates + b_ih).chunk(3, 1)
    hr, hz, hn = (hgates + b_hh).chunk(3, 1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (in_ + r * hn).tanh()
    torch.testing.assert_close(hy.cpu(), (1 - z) * n + z * hx)
    assert workspace.shape == (3, 10)


def test_double_backward_through_a_cell():
    # create_graph=True: the fused cells' backward is itself differentiated (ATen then
    # uses the differentiable backward formulas on openreg tensors).
    def grad_of_grad(x, h):
        cell = nn.GRUCell(4, 5).double().to(x.device)
        torch.manual_seed(0)
        with torch.no_grad():
            for p in cell.parameters():
                p.copy_(torch.randn(p.shape, dtype=p.dtype))
        (grad_x,) = torch.autograd.grad(cell(x, h).pow(2).sum(), x, create_graph=True)
        return torch.autograd.grad(grad_x.sum(), x)[0]

    generator = torch.Generator().manual_seed(5)
    x = torch.randn(2, 4, dtype=torch.float64, generator=generator).requires_grad_()
    h = torch.randn(2, 5, dtype=torch.float64, generator=generator)
    assert_matches_cpu(grad_of_grad, x, h)


def test_bad_cell_shapes_are_clear_errors():
    gates = torch.zeros(3, 8, device="openreg")
    with pytest.raises(RuntimeError, match=r"_thnn_fused_lstm_cell expects gates of shape"):
        torch.ops.aten._thnn_fused_lstm_cell(gates, gates, torch.zeros(3, 3, device="openreg"))
    with pytest.raises(RuntimeError, match=r"_thnn_fused_gru_cell expects both biases or neither"):
        torch.ops.aten._thnn_fused_gru_cell(gates[:, :6], gates[:, :6], torch.zeros(3, 2, device="openreg"),
                                   torch.zeros(6, device="openreg"))
    with pytest.raises(RuntimeError, match=r"_thnn_fused_gru_cell_backward expects a workspace"):
        torch.ops.aten._thnn_fused_gru_cell_backward(torch.zeros(3, 2, device="openreg"), gates,
                                                     True)
