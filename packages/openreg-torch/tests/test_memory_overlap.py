"""Writes that overlap what the same call reads: openreg raises where the CPU raises
("unsupported operation: some elements of the input tensor and the written-to tensor refer
to a single memory location") and computes what the CPU computes where it does not. CPU
kernels find such overlaps by comparing storages, so the aliases openreg gives them must
share one storage wherever the device tensors do (DeviceCall::share_written_storage), and
copies check before they memmove (_copy_from)."""

import pytest
import torch


def index(*values):
    return lambda z: torch.tensor(values, device=z.device)


CASES = {
    # Written in place (the boxed fallback's mutable arguments, direct kernels' self).
    "setitem_list": lambda z: z.__setitem__([1, 2], z[:2]),
    "index_copy_": lambda z: z.index_copy_(0, index(1, 2)(z), z[:2]),
    "index_put_accumulate": lambda z: z.index_put_((index(0, 1)(z),), z[2:], accumulate=True),
    "scatter_": lambda z: z.scatter_(0, torch.zeros(1, 4, dtype=torch.long, device=z.device),
                                     z[1:2]),
    "clamp_tensor_bound": lambda z: z.clamp_(max=z.t()),
    "atan2_": lambda z: z.atan2_(z.t()),
    "hypot_": lambda z: z.hypot_(z.t()),
    "bitwise_and_": lambda z: z.view(torch.int32).bitwise_and_(z.view(torch.int32).t()),
    # out= arguments (resizable aliases).
    "cumsum_out_shifted": lambda z: torch.cumsum(z.view(-1)[:-1], 0, out=z.view(-1)[1:]),
    "maximum_out": lambda z: torch.maximum(z, z.t(), out=z),
    "exp_out_transposed": lambda z: torch.exp(z.t(), out=z),
    "mul_out": lambda z: torch.mul(z, z.t(), out=z),
    "gather_out_self": lambda z: torch.gather(
        z, 1, torch.zeros(4, 4, dtype=torch.long, device=z.device), out=z),
    "index_select_out": lambda z: torch.index_select(z, 0, index(1, 0)(z), out=z[2:]),
    "cat_out": lambda z: torch.cat([z[:2], z[2:]], out=z),
    # Copies.
    "copy_transposed": lambda z: z.copy_(z.t()),
    "copy_shifted": lambda z: z.view(-1)[1:].copy_(z.view(-1)[:-1]),
    "setitem_shifted": lambda z: z.view(-1).__setitem__(slice(1, None), z.view(-1)[:-1]),
    # Allowed on the CPU: the same elements in the same order, or disjoint parts.
    "copy_same_memory": lambda z: z.copy_(z.view(4, 4)),
    "add_self": lambda z: z.add_(z),
    "mul_out_same": lambda z: torch.mul(z, z, out=z),
    "copy_disjoint_halves": lambda z: z[:2].copy_(z[2:]),
    "index_copy_disjoint": lambda z: z[:2].index_copy_(0, index(1, 0)(z), z[2:]),
    "cumsum_out_self": lambda z: torch.cumsum(z, 0, out=z),
}


def outcome(case, device):
    z = torch.arange(16.0, device=device).view(4, 4)
    try:
        CASES[case](z)
    except RuntimeError as error:
        return str(error).splitlines()[0]
    return z.cpu()


@pytest.mark.parametrize("case", sorted(CASES))
def test_overlapping_writes_behave_as_on_cpu(case):
    expected = outcome(case, "cpu")
    actual = outcome(case, "openreg")
    if isinstance(expected, str) or isinstance(actual, str):
        assert actual == expected
    else:
        torch.testing.assert_close(actual, expected, rtol=0, atol=0)


def test_overlap_errors_are_raised_at_all():
    # The table above must exercise the refusal itself, not only agree on results.
    refused = [case for case in CASES if isinstance(outcome(case, "cpu"), str)]
    assert len(refused) >= 15, refused


def test_shared_storage_does_not_stop_later_calls_from_reusing_aliases():
    # An overlapping call gives cached input aliases a shared storage; later calls on
    # the same tensors must still see their own, current data.
    z = torch.arange(16.0, device="openreg").view(4, 4)
    with pytest.raises(RuntimeError, match="single memory location"):
        z.index_copy_(0, index(1, 2)(z), z[:2])
    head, tail = z[:2], z[2:]
    for step in range(3):
        torch.testing.assert_close((head * tail + head).cpu(),
                                   (head.cpu() * tail.cpu() + head.cpu()))
        head.add_(1)


def test_many_arguments_over_one_storage():
    # A _foreach operator over views of one flat buffer (as FSDP's flat parameters are):
    # more aliases than the scan handles, all sharing one device storage.
    def run(device):
        flat = torch.arange(64.0, device=device)
        views = list(flat.split(4))
        torch._foreach_add_(views, views[::-1])
        torch._foreach_mul_(views, 0.5)
        return flat.cpu()

    torch.testing.assert_close(run("openreg"), run("cpu"), rtol=0, atol=0)
