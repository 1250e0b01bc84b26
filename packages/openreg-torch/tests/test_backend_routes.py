"""Operators PyTorch sends to PrivateUse1-specific entry points instead of the fallback:
convolutions, scaled dot-product attention (and the Transformer layers), FFTs."""

import torch
from torch import nn

from openreg_torch.testing import assert_matches_cpu


def train_steps(model_fn, data_fn, device, steps=5):
    torch.manual_seed(0)
    model = model_fn().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    inputs, targets = (t.to(device) for t in data_fn())
    torch.manual_seed(1)
    losses = []
    for _ in range(steps):
        loss = nn.functional.cross_entropy(model(inputs), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return model, losses


def assert_same_training(model_fn, data_fn, **tolerances):
    device_model, device_losses = train_steps(model_fn, data_fn, "openreg")
    cpu_model, cpu_losses = train_steps(model_fn, data_fn, "cpu")
    torch.testing.assert_close(device_losses, cpu_losses, **tolerances)
    for device_param, cpu_param in zip(device_model.parameters(), cpu_model.parameters()):
        torch.testing.assert_close(device_param.cpu(), cpu_param, **tolerances)


def test_conv_net_trains_like_cpu():
    def model():
        return nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 8, 3, groups=2), nn.BatchNorm2d(8), nn.ReLU(),
            nn.ConvTranspose2d(8, 4, 2, stride=2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
            nn.Linear(4, 5))

    def data():
        generator = torch.Generator().manual_seed(3)
        return torch.randn(6, 3, 16, 16, generator=generator), torch.randint(0, 5, (6,), generator=generator)

    assert_same_training(model, data)


def test_transformer_encoder_layer_trains_like_cpu():
    def model():
        return nn.Sequential(
            nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True),
            nn.Flatten(), nn.Linear(32 * 10, 3))

    def data():
        generator = torch.Generator().manual_seed(4)
        return torch.randn(4, 10, 32, generator=generator), torch.randint(0, 3, (4,), generator=generator)

    assert_same_training(model, data)


def test_sdpa_uses_the_cpu_choice_and_matches_exactly():
    def attention(q, k, v):
        return nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    assert_matches_cpu(attention, *(torch.randn(2, 4, 16, 8) for _ in range(3)), rtol=0, atol=0)


def test_fft_complex_round_trip():
    signal = torch.randn(4, 64)
    _, spectrum = assert_matches_cpu(torch.fft.rfft, signal)
    assert spectrum.dtype == torch.complex64 and spectrum.device.type == "openreg"
    torch.testing.assert_close(torch.fft.irfft(spectrum, n=64).cpu(), signal, atol=1e-5, rtol=1e-5)
    assert_matches_cpu(torch.fft.fft, torch.randn(8, dtype=torch.complex64))
