"""torch.abs on openreg runs the openreg kernel registered for abs_stub, not the fallback."""

import pytest
import torch

pytestmark = pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")

REAL_DTYPES = [
    torch.float32, torch.float64, torch.float16, torch.bfloat16,
    torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
    torch.float8_e4m3fn, torch.float8_e4m3fnuz, torch.float8_e5m2, torch.float8_e5m2fnuz,
]
COMPLEX_DTYPES = [torch.complex64, torch.complex128, torch.complex32]


def sample(dtype, shape=(6, 7)):
    """Values with both signs (and -0.0, inf, nan for floating types)."""
    if dtype.is_complex:
        values = torch.randn(shape, dtype=torch.complex64) * 3
        values.view(-1)[:2] = torch.tensor([complex(-0.0, 0.0), complex(float("-inf"), 1)])
        return values.to(dtype)
    if dtype.is_floating_point:
        values = torch.randn(shape) * 3
        values.view(-1)[:4] = torch.tensor([-0.0, float("-inf"), float("nan"), 1e30])
        return values.to(dtype)
    info = torch.iinfo(dtype)
    values = torch.randint(max(info.min, -1000), min(info.max, 1000), shape, dtype=dtype)
    values.view(-1)[:2] = torch.tensor([info.min, info.max], dtype=dtype)
    return values


def assert_same(device_result, cpu_result, exact=True):
    assert device_result.device.type == "openreg"
    assert device_result.dtype == cpu_result.dtype
    device_result = device_result.cpu()
    if cpu_result.dtype.itemsize == 1 and cpu_result.dtype.is_floating_point:  # float8
        device_result, cpu_result = device_result.float(), cpu_result.float()
    if (not exact or cpu_result.dtype.is_complex
            or cpu_result.dtype in (torch.float16, torch.bfloat16)):
        torch.testing.assert_close(device_result, cpu_result, equal_nan=True)
    else:
        # Real abs is exact: the same bits as CPU (NaN compared as NaN).
        torch.testing.assert_close(device_result, cpu_result, rtol=0, atol=0,
                                   equal_nan=True)


def test_abs_out_has_an_openreg_kernel_from_this_package():
    # DOC START: dump-table-abs
    table = torch._C._dispatch_dump_table("aten::abs.out")
    line = next(l for l in table.splitlines() if l.startswith("PrivateUse1:"))
    # DOC END: dump-table-abs
    assert "openreg-ops-extra/csrc/OpenRegExtra.cpp" in line and line.endswith("[kernel]"), line


@pytest.mark.parametrize("dtype", REAL_DTYPES + COMPLEX_DTYPES, ids=str)
def test_functional_matches_cpu_and_runs_the_stub(dtype, stub_calls):
    cpu = sample(dtype)
    result = torch.abs(cpu.to("openreg"))
    assert stub_calls() == 1
    # |z| of a complex value: the CPU's vectorised loop computes sqrt(re² + im²), its
    # scalar tail (and this kernel) hypot(re, im); they may differ in the last bit.
    assert_same(result, torch.abs(cpu), exact=not dtype.is_complex)


@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=str)
def test_in_place(dtype, stub_calls):
    cpu = sample(dtype)
    device = cpu.to("openreg")
    returned = device.abs_()
    assert returned is device
    assert stub_calls() == 1
    assert_same(device, cpu.abs_())


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.complex64], ids=str)
def test_out(dtype, stub_calls):
    cpu = sample(dtype)
    out = torch.empty(0, dtype=dtype.to_real(), device="openreg")  # resized by abs.out
    returned = torch.abs(cpu.to("openreg"), out=out)
    assert returned is out and out.shape == cpu.shape
    assert stub_calls() == 1
    assert_same(out, torch.abs(cpu))


def test_in_place_complex_is_rejected_as_on_cpu():
    with pytest.raises(RuntimeError, match="In-place abs is not supported for complex"):
        torch.randn(3, dtype=torch.complex64, device="openreg").abs_()


def test_out_of_the_wrong_dtype_is_rejected_as_on_cpu():
    cpu = torch.randn(4)
    with pytest.raises(RuntimeError) as cpu_error:
        torch.abs(cpu, out=torch.empty(4, dtype=torch.int64))
    with pytest.raises(RuntimeError) as device_error:
        torch.abs(cpu.to("openreg"), out=torch.empty(4, dtype=torch.int64, device="openreg"))
    assert str(device_error.value) == str(cpu_error.value)


def test_unsupported_dtype_is_an_error():
    with pytest.raises(NotImplementedError, match="abs_openreg.*Bool"):
        torch.abs(torch.ones(3, dtype=torch.bool, device="openreg"))


@pytest.mark.parametrize("view", [
    lambda t: t.t(),                      # transposed
    lambda t: t[::2, 1::3],               # strided slices
    lambda t: t[:, 2],                    # a column
    lambda t: t[1:2].expand(5, -1),       # broadcast (stride 0)
    lambda t: t.unsqueeze(1).permute(2, 1, 0),
], ids=["transposed", "sliced", "column", "expanded", "permuted"])
def test_non_contiguous_input(view, stub_calls):
    cpu = torch.randn(6, 8, dtype=torch.float64)
    device_view = view(cpu.to("openreg"))
    assert not device_view.is_contiguous()
    result = torch.abs(device_view)
    assert stub_calls() == 1
    assert_same(result, torch.abs(view(cpu)))


def test_non_contiguous_out_and_in_place_view(stub_calls):
    cpu = torch.randn(6, 8)
    device = cpu.to("openreg")
    out = torch.empty(8, 6, device="openreg").t()
    torch.abs(device, out=out)
    assert out.stride() == (1, 6)
    assert_same(out, cpu.abs())
    column = device[:, 3]
    column.abs_()
    cpu[:, 3].abs_()
    assert_same(device, cpu)
    assert stub_calls() == 2


@pytest.mark.parametrize("shape", [(0,), (0, 3), (4, 0, 2)])
def test_empty(shape):
    for dtype in (torch.float32, torch.complex64):
        result = torch.abs(torch.empty(shape, dtype=dtype, device="openreg"))
        assert result.shape == shape and result.dtype == dtype.to_real()
        assert result.device.type == "openreg"
    device = torch.empty(shape, device="openreg")
    assert device.abs_().shape == shape


def test_zero_dim(stub_calls):
    result = torch.abs(torch.tensor(-2.5, device="openreg"))
    assert result.shape == () and result.item() == 2.5
    assert stub_calls() == 1


def test_large_tensor_split_across_threads(stub_calls):
    cpu = torch.randn(1 << 20)
    assert_same(torch.abs(cpu.to("openreg")), cpu.abs())
    assert_same(torch.abs(cpu.to("openreg")[::3]), cpu[::3].abs())
    assert stub_calls() == 2


def test_second_device_and_side_stream(stub_calls):
    cpu = torch.randn(64, 64)
    on_one = cpu.to("openreg:1")
    result = torch.abs(on_one)
    assert result.device == torch.device("openreg:1")
    assert_same(result, cpu.abs())
    stream = torch.openreg.Stream(device=1)
    with torch.openreg.stream(stream):
        # Stream order: the copy and the kernel queue behind each other on `stream`.
        staged = cpu.neg().to("openreg:1", non_blocking=True)
        result = torch.abs(staged)
    stream.synchronize()
    assert_same(result, cpu.abs())
    assert torch.openreg.current_device() == 0
    assert stub_calls() == 2


def test_autograd_through_abs(stub_calls):
    cpu = torch.randn(5, dtype=torch.float64, requires_grad=True)
    device = cpu.detach().to("openreg").requires_grad_()
    torch.abs(device).sum().backward()
    torch.abs(cpu).sum().backward()
    assert_same(device.grad, cpu.grad)
    assert stub_calls() >= 1


def test_no_fallback_needed(run_python):
    # In selective mode nothing may fall back: torch.abs only works on openreg because
    # abs, abs_ and abs.out reach the stub kernel (empty, resize_ and copies are kernels).
    result = run_python(
        """
        import torch, openreg_ops_extra
        import openreg_torch
        assert openreg_torch.fallback.mode() == "selective", openreg_torch.fallback.mode()
        x = torch.tensor([-1.5, 2.0, -3.0]).to("openreg")
        print(torch.abs(x).cpu().tolist(), x.abs_().cpu().tolist(),
              torch.abs(x, out=torch.empty(3, device="openreg")).cpu().tolist(),
              openreg_ops_extra.custom_abs(torch.tensor([-1.5, 2.0, 3.0]).to("openreg")).cpu().tolist())
        try:
            torch.sgn(x)  # no openreg kernel: must not fall back in this mode
        except NotImplementedError:
            print("sgn refused")
        """,
        env={"OPENREG_FALLBACK": "selective"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == [
        "[1.5, 2.0, 3.0] [1.5, 2.0, 3.0] [1.5, 2.0, 3.0] [1.5, 2.0, 3.0]", "sgn refused"]
