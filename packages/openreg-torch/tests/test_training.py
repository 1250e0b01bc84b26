"""Autograd and training on openreg match the CPU step for step."""

import torch
from torch import nn

from openreg_torch.testing import assert_matches_cpu


def train(device, steps=20):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 3)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    data = torch.randn(64, 10, generator=torch.Generator().manual_seed(1)).to(device)
    labels = torch.randint(0, 3, (64,), generator=torch.Generator().manual_seed(2)).to(device)
    # Initialisation drew from the CPU generator only; reseed so that dropout on either
    # device starts from the same generator state (each device has its own generator).
    torch.manual_seed(1)
    losses = []
    for _ in range(steps):
        loss = nn.functional.cross_entropy(model(data), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return model, losses


def test_training_matches_cpu():
    device_model, device_losses = train("openreg")
    cpu_model, cpu_losses = train("cpu")
    torch.testing.assert_close(device_losses, cpu_losses)
    assert device_losses[-1] < device_losses[0]
    for device_param, cpu_param in zip(device_model.parameters(), cpu_model.parameters()):
        assert device_param.device.type == "openreg"
        torch.testing.assert_close(device_param.cpu(), cpu_param)


def test_gradients_match_cpu():
    def gradient(tensor):
        return torch.autograd.grad((tensor.tanh() @ tensor.t()).logsumexp(dim=1).sum(), tensor)

    assert_matches_cpu(gradient, torch.randn(4, 6, dtype=torch.float64, requires_grad=True))


def test_gradcheck_on_device():
    inputs = torch.randn(3, 3, dtype=torch.float64, device="openreg", requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: (x.sin() * x).sum(dim=0), (inputs,))


def test_module_helpers():
    model = nn.Linear(2, 2).openreg()
    assert all(p.is_openreg for p in model.parameters())
    assert torch.ones(1).openreg(1).device == torch.device("openreg", 1)
    storage = torch.ones(2).untyped_storage().openreg()
    assert storage.is_openreg and storage.device.type == "openreg"
