"""torch.save / torch.load of openreg tensors and state dicts."""

import io

import torch
from torch import nn


def round_trip(obj, **load_kwargs):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer, **load_kwargs)


def test_tensor_round_trip_keeps_device():
    tensor = torch.randn(3, 4, device="openreg:1")
    loaded = round_trip(tensor)
    assert loaded.device == torch.device("openreg", 1)
    torch.testing.assert_close(loaded.cpu(), tensor.cpu())


def test_shared_storage_survives():
    base = torch.arange(10.0, device="openreg")
    view = base[2:5]
    loaded_base, loaded_view = round_trip((base, view))
    loaded_view.fill_(-1)
    assert loaded_base[3].item() == -1


def test_state_dict_with_map_location():
    model = nn.Linear(3, 2).to("openreg")
    state = round_trip(model.state_dict(), map_location="cpu")
    assert all(value.device.type == "cpu" for value in state.values())
    to_device_1 = round_trip(model.state_dict(), map_location="openreg:1")
    assert all(value.device == torch.device("openreg", 1) for value in to_device_1.values())
    cpu_state = round_trip(nn.Linear(3, 2).state_dict(), map_location="openreg")
    assert all(value.device.type == "openreg" for value in cpu_state.values())
    fresh = nn.Linear(3, 2).to("openreg")
    fresh.load_state_dict(round_trip(model.state_dict()))
    for a, b in zip(fresh.parameters(), model.parameters()):
        torch.testing.assert_close(a.cpu(), b.cpu())
