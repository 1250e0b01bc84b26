"""Sparse tensors on openreg: COO, CSR, CSC, BSR and BSC tensors whose members (indices,
values) are openreg tensors, their conversions, operators and gradients, matching the CPU.
Sparse kernels run zero-copy: the CPU kernel sees a CPU sparse tensor over the members'
kernel views (csrc/execution/SparseKernelView.h)."""

import io
import warnings

import pytest
import torch
from torch import nn

import openreg_torch

LAYOUTS = {
    torch.sparse_coo: lambda t: t.to_sparse(),
    torch.sparse_csr: lambda t: t.to_sparse_csr(),
    torch.sparse_csc: lambda t: t.to_sparse_csc(),
    torch.sparse_bsr: lambda t: t.to_sparse_bsr((2, 3)),
    torch.sparse_bsc: lambda t: t.to_sparse_bsc((2, 3)),
}


@pytest.fixture(autouse=True)
def quiet_sparse_warnings():
    # PyTorch warns once that CSR is beta and that invariant checks are off, on CPU too.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ss]parse.*")
        yield


def sparse_matrix(rows=4, columns=6, seed=0):
    generator = torch.Generator().manual_seed(seed)
    dense = torch.randn(rows, columns, generator=generator)
    return dense * (dense.abs() > 0.6)


def members(tensor):
    if tensor.layout == torch.sparse_coo:
        return [tensor._indices(), tensor._values()]
    if tensor.layout in (torch.sparse_csr, torch.sparse_bsr):
        return [tensor.crow_indices(), tensor.col_indices(), tensor.values()]
    return [tensor.ccol_indices(), tensor.row_indices(), tensor.values()]


def assert_sparse_matches(device_tensor, cpu_tensor):
    assert device_tensor.layout == cpu_tensor.layout
    assert device_tensor.device.type == "openreg"
    assert all(member.device == device_tensor.device for member in members(device_tensor))
    torch.testing.assert_close(device_tensor.cpu().to_dense(), cpu_tensor.to_dense())


@pytest.mark.parametrize("layout", list(LAYOUTS), ids=str)
def test_conversions_both_ways(layout):
    dense = sparse_matrix()
    cpu = LAYOUTS[layout](dense)
    from_cpu = cpu.to("openreg")            # a CPU sparse tensor moved over
    on_device = LAYOUTS[layout](dense.to("openreg"))  # made on the device
    for tensor in (from_cpu, on_device):
        assert_sparse_matches(tensor, cpu)
        back = tensor.cpu()
        assert back.layout == layout and back.device.type == "cpu"
        for got, want in zip(members(back), members(cpu)):
            torch.testing.assert_close(got, want)
        torch.testing.assert_close(tensor.to_dense().cpu(), dense)


def test_coo_factory_and_members_stay_on_device():
    indices = torch.tensor([[0, 1, 1], [2, 0, 2]], device="openreg")
    values = torch.tensor([3.0, 4.0, 5.0], device="openreg")
    tensor = torch.sparse_coo_tensor(indices, values, (2, 3))
    assert tensor.device.type == "openreg" and tensor.layout == torch.sparse_coo
    # The factory takes the device tensors themselves as members (no copy).
    assert tensor._values().data_ptr() == values.data_ptr()
    expected = torch.sparse_coo_tensor(indices.cpu(), values.cpu(), (2, 3))
    torch.testing.assert_close(tensor.to_dense().cpu(), expected.to_dense())
    empty = torch.empty(2, 3, layout=torch.sparse_coo, device="openreg")
    assert empty.device.type == "openreg" and empty._nnz() == 0


def test_operators_match_cpu():
    dense, other = sparse_matrix(), sparse_matrix(seed=1)
    weights = torch.randn(6, 5)
    bias = torch.randn(4, 5)
    cpu, device = dense.to_sparse(), dense.to("openreg").to_sparse()
    cpu_other, device_other = other.to_sparse(), other.to("openreg").to_sparse()
    openreg_weights, openreg_bias = weights.to("openreg"), bias.to("openreg")
    torch.testing.assert_close(torch.sparse.mm(device, openreg_weights).cpu(),
                               torch.sparse.mm(cpu, weights))
    torch.testing.assert_close(torch.addmm(openreg_bias, device, openreg_weights).cpu(),
                               torch.addmm(bias, cpu, weights))
    torch.testing.assert_close(torch.mm(dense.to("openreg").to_sparse_csr(),
                                        openreg_weights).cpu(), dense @ weights)
    # Element-wise operators, sums and coalescing keep the sparse layout.
    summed = (device + device_other).coalesce()
    assert summed.is_coalesced()
    assert_sparse_matches(summed, (cpu + cpu_other).coalesce())
    assert_sparse_matches(device.sin() * 2, cpu.sin() * 2)
    torch.testing.assert_close(torch.sparse.sum(device).cpu(), torch.sparse.sum(cpu))
    assert_sparse_matches(torch.sparse.sum(device, dim=1), torch.sparse.sum(cpu, dim=1))
    # In place: the sparse tensor takes the members the kernel built.
    grown = device.clone()
    grown.add_(device_other)
    assert_sparse_matches(grown, cpu + cpu_other)


def test_sampled_addmm_matches_cpu():
    mask, left, right = sparse_matrix(), torch.randn(4, 3), torch.randn(3, 6)

    def sampled(device):
        return torch.sparse.sampled_addmm(mask.to(device).to_sparse_csr(), left.to(device),
                                          right.to(device), beta=0.5, alpha=2.0)

    assert_sparse_matches(sampled("openreg"), sampled("cpu"))


def test_a_sparse_tensor_passed_as_input_and_output_is_one_tensor_to_the_kernel():
    # smm passes its fresh result to sspaddmm as both self and out; the CPU kernel resizes
    # out and then reads self's size, so both must be one CPU tensor (it raised "sspaddmm:
    # Argument #1: Expected dim 0 size 2, got 0" when each argument had its own alias).
    dense, weights = sparse_matrix(), torch.randn(6, 2)
    assert_sparse_matches(torch.smm(dense.to("openreg").to_sparse(), weights.to("openreg")),
                          torch.smm(dense.to_sparse(), weights))

    def written_in_place(device):
        result = torch.ones(4, 2).to(device).to_sparse()
        torch.sspaddmm(result, dense.to(device).to_sparse(), weights.to(device), out=result)
        return result

    assert_sparse_matches(written_in_place("openreg"), written_in_place("cpu"))


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin"])
def test_mm_reduce_and_its_gradients_match_cpu(reduce):
    # amax/amin keep their backward's argmax only for inputs that require grad: the CPU
    # kernel must see requires_grad on the aliases.
    matrix, weights = sparse_matrix(), torch.randn(6, 5)

    def run(device):
        sparse = matrix.to(device, copy=True).to_sparse_csr().requires_grad_()
        dense = weights.to(device, copy=True).requires_grad_()
        out = torch.sparse.mm(sparse, dense, reduce)
        out.pow(2).sum().backward()
        return out.detach().cpu(), dense.grad.cpu(), sparse.grad.to_dense().cpu()

    torch.testing.assert_close(run("openreg"), run("cpu"))


def test_sparse_gradients_match_cpu():
    matrix, weights = sparse_matrix(), torch.randn(6, 5)

    def run(device):
        sparse = matrix.to(device, copy=True).to_sparse().requires_grad_()
        dense = weights.to(device, copy=True).requires_grad_()
        torch.sparse.mm(sparse, dense).sum().backward()
        summed = matrix.to(device, copy=True).to_sparse().requires_grad_()
        torch.sparse.sum(summed, dim=1).to_dense().pow(2).sum().backward()
        assert sparse.grad.layout == torch.sparse_coo and summed.grad.layout == torch.sparse_coo
        return (sparse.grad.to_dense().cpu(), dense.grad.cpu(), summed.grad.to_dense().cpu())

    torch.testing.assert_close(run("openreg"), run("cpu"))


def test_sparse_embedding_trains_with_sparse_adam_like_cpu():
    def train(device):
        torch.manual_seed(1)
        embedding = nn.Embedding(10, 3, sparse=True).to(device)
        optimizer = torch.optim.SparseAdam(embedding.parameters(), lr=0.1)
        tokens = torch.tensor([[1, 2, 4, 5], [4, 3, 2, 9]], device=device)
        for _ in range(3):
            optimizer.zero_grad()
            embedding(tokens).pow(2).sum().backward()
            assert embedding.weight.grad.layout == torch.sparse_coo
            assert embedding.weight.grad.device.type == device
            optimizer.step()
        return embedding.weight.detach().cpu()

    torch.testing.assert_close(train("openreg"), train("cpu"))


@pytest.mark.parametrize("layout", [torch.sparse_coo, torch.sparse_csr, torch.sparse_bsc],
                         ids=str)
def test_save_and_load_round_trip(layout):
    tensor = LAYOUTS[layout](sparse_matrix().to("openreg:1"))
    buffer = io.BytesIO()
    torch.save(tensor, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)
    assert loaded.device == torch.device("openreg", 1) and loaded.layout == layout
    torch.testing.assert_close(loaded.cpu().to_dense(), tensor.cpu().to_dense())


def test_sparse_operators_run_zero_copy():
    # One kernel per operator and no copies: the CPU kernel ran on the members' kernel
    # views and its results were adopted (a copied result would add a kernel and a copy).
    sparse = sparse_matrix().to("openreg").to_sparse()
    weights = torch.randn(6, 5, device="openreg")
    torch.openreg.synchronize()
    openreg_torch._C._start_device_work_log()
    try:
        result = torch.sparse.mm(sparse, weights)
        coalesced = (sparse + sparse).coalesce()
        torch.openreg.synchronize()
    finally:
        work = openreg_torch._C._stop_device_work_log()
    assert [(kind, name) for kind, name, _, _ in work] == [
        ("kernel", "aten::zero_"), ("kernel", "aten::addmm"), ("kernel", "aten::add")]
    assert coalesced.device.type == "openreg" and result.device.type == "openreg"


def test_mixing_a_cpu_sparse_tensor_is_rejected():
    sparse_cpu = sparse_matrix().to_sparse()
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.sparse.mm(sparse_cpu, torch.randn(6, 5, device="openreg"))


def test_an_operator_the_cpu_lacks_for_sparse_names_openregs_sparse_key():
    # PyTorch has a dense cumsum and no SparseCPU one (in 2.13 also no sparse
    # linalg_vector_norm, which clip_grad_norm_ of an Embedding(sparse=True) gradient
    # meets): the error names openreg's key, as CUDA's names SparseCUDA, not the SparseCPU
    # kernel openreg's fallback would have run.
    sparse = torch.sparse_coo_tensor(torch.tensor([[1, 2]]), torch.ones(2, 3), (10, 3))
    with pytest.raises(NotImplementedError, match="'SparseCPU' backend"):
        sparse.cumsum(0)
    with pytest.raises(NotImplementedError,
                       match=r"cumsum' with arguments from the 'SparsePrivateUse1' backend: "
                             r"PyTorch has no SparseCPU kernel"):
        sparse.to("openreg").cumsum(0)
