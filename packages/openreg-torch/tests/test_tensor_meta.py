"""Backend metadata (c10::BackendMeta) on openreg tensors: the layout tag of
torch.openreg.set_layout_tag / get_layout_tag, kept through copies between openreg
tensors, shallow copies and torch.save / torch.load."""

import io

import pytest
import torch


def round_trip(obj, **load_kwargs):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer, **load_kwargs)


def tagged(tag="blocked8", device="openreg"):
    tensor = torch.arange(6.0, device=device).reshape(2, 3)
    torch.openreg.set_layout_tag(tensor, tag)
    return tensor


def test_set_read_and_clear():
    tensor = torch.zeros(3, device="openreg")
    assert torch.openreg.get_layout_tag(tensor) is None
    torch.openreg.set_layout_tag(tensor, "nc4hw")
    assert torch.openreg.get_layout_tag(tensor) == "nc4hw"
    torch.openreg.set_layout_tag(tensor, None)
    assert torch.openreg.get_layout_tag(tensor) is None


def test_kept_through_copies_between_openreg_tensors():
    tensor = tagged()
    assert torch.openreg.get_layout_tag(tensor.clone()) == "blocked8"
    moved = tensor.to("openreg:1")
    assert moved.device == torch.device("openreg", 1)
    assert torch.openreg.get_layout_tag(moved) == "blocked8"
    assert torch.openreg.get_layout_tag(tensor.detach()) == "blocked8"  # shallow copy
    assert torch.openreg.get_layout_tag(tensor.data) == "blocked8"
    # A destination with a tag of its own keeps it; computed tensors start untagged.
    destination = tagged("other")
    destination.copy_(tensor)
    assert torch.openreg.get_layout_tag(destination) == "other"
    assert torch.openreg.get_layout_tag(tensor + 1) is None
    torch.testing.assert_close(moved.cpu(), tensor.cpu())


def test_survives_save_and_load():
    tensor = tagged(device="openreg:1")
    loaded = round_trip(tensor)
    assert loaded.device == torch.device("openreg", 1)
    assert torch.openreg.get_layout_tag(loaded) == "blocked8"
    torch.testing.assert_close(loaded.cpu(), tensor.cpu())
    state = round_trip({"weight": tensor, "plain": torch.ones(2, device="openreg")})
    assert torch.openreg.get_layout_tag(state["weight"]) == "blocked8"
    assert torch.openreg.get_layout_tag(state["plain"]) is None
    # Loaded onto the CPU, the tag has nowhere to go: the tensor loads without it.
    on_cpu = round_trip(tensor, map_location="cpu")
    torch.testing.assert_close(on_cpu, tensor.cpu())


def test_bad_tags_and_tensors_are_rejected():
    tensor = torch.zeros(2, device="openreg")
    for bad in ["", "has space", "x" * 65, "dot.ted"]:
        with pytest.raises(RuntimeError, match="a layout tag is 1 to 64 letters"):
            torch.openreg.set_layout_tag(tensor, bad)
    with pytest.raises(RuntimeError, match="takes a strided openreg tensor"):
        torch.openreg.set_layout_tag(torch.zeros(2), "cpu_tensor")
    with pytest.raises(RuntimeError, match="takes a strided openreg tensor"):
        torch.openreg.get_layout_tag(torch.zeros(2, 2, device="openreg").to_sparse())


def test_fake_tensors_have_no_extension_point_for_it():
    """FakeTensorMode builds a fake tensor from a fresh meta tensor and never asks the
    backend (docs/operators.md): the fake copy of a tagged tensor is untagged. If a torch
    release starts carrying BackendMeta there, this fails and the docs must change."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    tensor = tagged()
    with FakeTensorMode() as mode:
        fake = mode.from_tensor(tensor)
        assert fake.device == tensor.device and fake.shape == tensor.shape
        assert torch.openreg.get_layout_tag(fake) is None
        torch.openreg.set_layout_tag(fake, "nc4hw")  # a tag set on the fake tensor stays
        assert torch.openreg.get_layout_tag(fake) == "nc4hw"
