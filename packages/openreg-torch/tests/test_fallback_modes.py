"""The three fallback modes (zero-copy, copy, selective) and per-operator allow/deny."""

import contextlib

import pytest
import torch

import openreg_torch


def test_default_mode_is_zero_copy():
    assert openreg_torch.fallback.mode() == "zero-copy"


def test_zero_copy_results_are_adopted_not_copied():
    # A fresh result is allocated in device memory by the CPU kernel itself: the
    # allocator sees exactly one device allocation for it.
    source = torch.randn(1 << 16, device="openreg")
    torch.openreg.synchronize()
    before = torch.openreg.memory_stats()["allocation.all.allocated"]
    result = source.exp()
    after = torch.openreg.memory_stats()["allocation.all.allocated"]
    assert after - before == 1
    torch.testing.assert_close(result.cpu(), source.cpu().exp())


@pytest.mark.parametrize("mode", ["grad", "no_grad", "inference"])
def test_fresh_results_are_device_tensors_like_factory_made_ones(mode):
    # The CPU kernel's own result object becomes the device tensor (DeviceCall::to_device):
    # it must be indistinguishable from one made on the device, in every grad mode.
    context = {"grad": contextlib.nullcontext, "no_grad": torch.no_grad,
               "inference": torch.inference_mode}[mode]
    a = torch.randn(4, 4).to("openreg:1")
    b = torch.randn(4, 4).to("openreg:1")
    torch.openreg.synchronize(1)
    allocated = torch.openreg.memory_allocated(1)
    with context():
        reference = torch.empty(4, 4, device="openreg:1")
        results = [
            a * b,                               # a direct kernel
            torch.special.i1e(a),                # the boxed zero-copy fallback
            *torch.sort(a, dim=1),               # two fresh results of one call
            *torch.max(b, dim=0),
        ]
        for result in results:
            assert result.device == torch.device("openreg", 1)
            assert torch._C._dispatch_keys(result) == torch._C._dispatch_keys(reference), mode
            assert result.is_inference() == reference.is_inference()
        with torch.autocast("openreg", dtype=torch.bfloat16):
            assert (results[0] @ results[1]).dtype == torch.bfloat16
    torch.testing.assert_close(results[0].cpu(), a.cpu() * b.cpu())
    torch.testing.assert_close(results[2].cpu(), torch.sort(a.cpu(), dim=1).values)
    del results, result, reference
    torch.openreg.synchronize(1)
    assert torch.openreg.memory_allocated(1) == allocated


def test_fresh_results_keep_autograd_working():
    a = torch.randn(3, 3).to("openreg").requires_grad_()
    product = a * a
    assert product.grad_fn is not None and product.requires_grad
    product.sum().backward()
    torch.testing.assert_close(a.grad.cpu(), 2 * a.detach().cpu())


def test_zero_copy_out_variant_resizes_in_device_memory():
    out = torch.empty(0, device="openreg")
    pointer_before = out.data_ptr()
    torch.sin(torch.arange(100.0, device="openreg"), out=out)
    assert out.shape == (100,) and out.device.type == "openreg"
    assert out.data_ptr() != pointer_before
    torch.testing.assert_close(out.cpu(), torch.arange(100.0).sin())


def test_copy_mode(run_python):
    result = run_python(
        """
        import torch, openreg_torch
        assert openreg_torch.fallback.mode() == "copy"
        x = torch.arange(6.0, device="openreg").view(2, 3)
        x.add_(1)
        print(x.sum().item(), x.t().contiguous().cpu().tolist())
        try:
            torch._fused_dropout(x, 0.5)  # CUDA only: no CPU kernel to copy around
        except NotImplementedError as error:
            assert "missing on openreg" in str(error) and "'CPU'" not in str(error), error
            print("named missing")
        """,
        env={"OPENREG_FALLBACK": "copy"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["21.0 [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]",
                                             "named missing"]


def test_copy_mode_moves_nested_tensors_and_refuses_their_operators(run_python):
    # The copy fallback moved a nested argument to the CPU through itself and recursed until
    # the stack overflowed (SIGSEGV). Nested moves now take PyTorch's nested _to_copy; the
    # copy fallback still runs dense CPU kernels only, so a nested operator raises.
    result = run_python(
        """
        import warnings; warnings.filterwarnings("ignore")
        import torch
        nested = torch.nested.nested_tensor([torch.ones(2), torch.arange(3.0)], device="openreg")
        print(nested.cpu().device, [c.tolist() for c in nested.cpu().unbind()])
        try:
            nested.relu()
        except NotImplementedError as error:
            print("refused")
        """,
        env={"OPENREG_FALLBACK": "copy"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["cpu [[1.0, 1.0], [0.0, 1.0, 2.0]]", "refused"]


def test_copy_mode_runs_sparse_operators_zero_copy(run_python):
    # cpu_fallback would redispatch them to the dense CPU kernel ("Could not run
    # 'aten::_coalesce' ... from the 'CPU' backend"): calls with a sparse argument take the
    # zero-copy fallback, which reaches SparseCPU.
    result = run_python(
        """
        import torch
        indices = torch.tensor([[0, 1, 1, 3], [1, 0, 2, 3]])
        values = torch.tensor([1.0, 2.0, 3.0, 4.0])
        dense = torch.arange(8.0).view(4, 2)
        for device in ("cpu", "openreg"):
            a = torch.sparse_coo_tensor(indices, values, (4, 4)).to(device)
            d = dense.to(device)
            print(device, a.coalesce().values().cpu().tolist(), a.to_dense().sum().item(),
                  torch.mm(a, d).cpu().tolist(), torch.sparse.mm(a, d).cpu().tolist())
        """,
        env={"OPENREG_FALLBACK": "copy"},
    )
    assert result.returncode == 0, result.stderr
    cpu, device = result.stdout.splitlines()[:2]
    assert cpu.startswith("cpu ") and device == "openreg" + cpu[3:], result.stdout


def test_selective_mode_allows_only_listed_ops(run_python):
    result = run_python(
        """
        import torch, openreg_torch
        assert openreg_torch.fallback.mode() == "selective"
        x = torch.ones(3).to("openreg")  # factories and copies are real kernels
        try:
            x.exp()
        except NotImplementedError as error:
            assert "aten::exp" in str(error) and "openreg" in str(error), error
            print("exp refused")
        openreg_torch.fallback.allow("aten::exp")
        print(x.exp().cpu().sum().item())
        """,
        env={"OPENREG_FALLBACK": "selective"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[0] == "exp refused"
    assert abs(float(result.stdout.split("\n")[1]) - 3 * 2.718281828) < 1e-4


def test_deny_list(run_python):
    result = run_python(
        """
        import torch, openreg_torch
        openreg_torch.fallback.deny("aten::median")
        x = torch.ones(3, device="openreg")
        print(x.exp().sum().item() > 0)
        try:
            x.median()
        except NotImplementedError as error:
            print("denied" if "aten::median" in str(error) else error)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "denied"]


def test_bad_mode_is_a_clear_error(run_python):
    result = run_python(
        "import torch; torch.ones(2, device='openreg').exp()", env={"OPENREG_FALLBACK": "fast"}
    )
    assert result.returncode != 0
    assert "OPENREG_FALLBACK=fast is not a fallback mode" in result.stderr


def test_allow_unknown_operator():
    with pytest.raises(RuntimeError, match="no operator named 'aten::nope'"):
        openreg_torch.fallback.allow("aten::nope")
