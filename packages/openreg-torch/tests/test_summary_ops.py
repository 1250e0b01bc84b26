"""torch.histc with CUDA's dtype coverage: floating tensors as on the CPU, integer tensors
counted too (the CPU refuses them; transformers' mixture-of-experts routing counts tokens
per expert with histc of an int tensor on every device but the CPU and MPS)."""

import pytest
import torch


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("bounds", [(0, 0), (-2, 5), (1, 1)], ids=str)
def test_histc_of_floating_tensors_matches_cpu(dtype, bounds):
    x = torch.randn(200, generator=torch.Generator().manual_seed(0), dtype=dtype) * 3
    expected = torch.histc(x, bins=7, min=bounds[0], max=bounds[1])
    actual = torch.histc(x.to("openreg"), bins=7, min=bounds[0], max=bounds[1])
    torch.testing.assert_close(actual.cpu(), expected, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.int16], ids=str)
@pytest.mark.parametrize(("bins", "bounds"), [(4, (0, 3)), (5, (0, 0)), (3, (2, 9)), (8, (1, 1)),
                                             (10, (0.5, 9.5)), (3, (0.2, 0.8)), (4, (-0.9, 7.9))],
                         ids=str)
def test_histc_counts_integer_tensors_as_cuda_does(dtype, bins, bounds):
    values = torch.tensor([0, 3, 1, 1, 2, 3, 3, 7, 9, 12, 2, 0], dtype=dtype)
    counts = torch.histc(values.to("openreg"), bins=bins, min=bounds[0], max=bounds[1])
    assert counts.dtype == dtype and counts.device.type == "openreg"
    # CUDA's integer bins are (x - min) * bins / (max - min) in integer arithmetic, with
    # max in the last bin and elements outside [min, max] left out; min == max means the
    # data's own range (widened by one each way when that is one value too). The bounds are
    # taken as integers, truncated toward zero.
    low, high = int(bounds[0]), int(bounds[1])
    if low == high:
        low, high = int(values.min()), int(values.max())
        if low == high:
            low, high = low - 1, high + 1
    expected = torch.zeros(bins, dtype=torch.int64)
    for x in values.tolist():
        if low <= x <= high:
            expected[min((x - low) * bins // (high - low), bins - 1)] += 1
    assert counts.cpu().tolist() == expected.tolist()


def test_histc_of_bool_is_refused_as_on_cuda():
    with pytest.raises(RuntimeError, match="histogram_cpu.*Bool|Bool"):
        torch.histc(torch.ones(3, dtype=torch.bool, device="openreg"), bins=2)
