"""torch.use_deterministic_algorithms(True) with torch.utils.deterministic.
fill_uninitialized_memory (on by default): openreg's empty, empty_strided and resize_ fill
fresh memory exactly as the CPU's do (NaN for floating and complex types, the largest
value for integers and bool), and leave it alone when the flag is off."""

import math

import pytest
import torch

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.complex64,
          torch.int8, torch.uint8, torch.int32, torch.int64, torch.bool]


@pytest.fixture
def deterministic():
    previous = (torch.are_deterministic_algorithms_enabled(),
                torch.is_deterministic_algorithms_warn_only_enabled(),
                torch.utils.deterministic.fill_uninitialized_memory)
    torch.use_deterministic_algorithms(True)
    yield
    torch.use_deterministic_algorithms(previous[0], warn_only=previous[1])
    torch.utils.deterministic.fill_uninitialized_memory = previous[2]


def same_as_cpu(make):
    """make(device) -> tensor; the openreg result equals the CPU's, NaN for NaN."""
    expected, actual = make("cpu"), make("openreg")
    assert actual.device.type == "openreg"
    torch.testing.assert_close(actual.cpu(), expected, equal_nan=True, rtol=0, atol=0)
    return actual.cpu()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_empty_and_empty_strided_are_filled_like_cpu(deterministic, dtype):
    # Dirty the device memory first, so a fill cannot pass by luck of fresh zeros.
    torch.full((64,), 7, dtype=torch.int8, device="openreg")
    empty = same_as_cpu(lambda device: torch.empty(3, 4, dtype=dtype, device=device))
    same_as_cpu(lambda device: torch.empty_strided((2, 3), (1, 2), dtype=dtype, device=device))
    same_as_cpu(lambda device: torch.empty_like(torch.ones(5, dtype=dtype, device=device)))
    if dtype.is_floating_point or dtype.is_complex:
        assert torch.isnan(empty).all()
    elif dtype == torch.bool:
        assert empty.all()
    else:
        assert (empty == torch.iinfo(dtype).max).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=str)
def test_resize_fills_only_the_new_elements_like_cpu(deterministic, dtype):
    def grown(device):
        tensor = torch.arange(4, device=device).to(dtype)
        tensor.resize_(3, 3)
        tensor.resize_(2)  # shrinking keeps the storage: nothing new to fill
        tensor.resize_(12)
        return tensor

    values = same_as_cpu(grown)
    assert values[:4].tolist() == [0, 1, 2, 3]
    filler = math.nan if dtype.is_floating_point else torch.iinfo(dtype).max
    assert values[4:].tolist() != [0] * 8
    torch.testing.assert_close(values[4:], torch.full((8,), filler, dtype=dtype), equal_nan=True)


def test_no_fill_when_the_flag_is_off(deterministic):
    torch.utils.deterministic.fill_uninitialized_memory = False
    torch.full((256,), 5.0, device="openreg")  # freed: its block is reused below
    recycled = torch.empty(256, device="openreg")
    assert not torch.isnan(recycled).any()


def test_no_fill_without_deterministic_algorithms():
    assert not torch.are_deterministic_algorithms_enabled()
    torch.full((256,), 5.0, device="openreg")
    assert not torch.isnan(torch.empty(256, device="openreg")).any()
