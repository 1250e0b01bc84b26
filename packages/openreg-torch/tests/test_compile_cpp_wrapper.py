"""Inductor's C++ wrapper on openreg: torch.compile with cpp_wrapper=True, and
AOTInductor (aoti_compile_and_package / aoti_load_package). The generated C++ host code
launches each kernel through the execution layer on the current openreg stream
(openreg_torch/_inductor/wrapper_cpp.py, csrc/execution/CompiledKernelCApi), with
kernel-view addresses, never the tensors' device addresses; an AOTInductor package runs
with openreg's model runner (csrc/inductor/OpenRegModelContainerRunner).

Results are compared with the same function compiled with the C++ wrapper on the CPU and
with eager CPU. Each C++ wrapper is a C++ build (seconds): few, tiny graphs, cached in
TORCHINDUCTOR_CACHE_DIR like the other compile tests.
"""

import ctypes
import os

import pytest
import torch
import torch._dynamo
import torch._inductor.config as inductor_config
from torch import nn
from torch._inductor.utils import run_and_get_cpp_code

import openreg_torch
from openreg_torch.testing import recorded_device_work


# Not in the py311-sanitize env, for test_compile.py's reason (C++ compiles under the
# sanitizer preload, uninstrumented kernels).
pytestmark = pytest.mark.skipif(
    os.environ.get("OPENREG_EXPECT_SANITIZERS") == "1",
    reason="not under the sanitizers: Inductor's C++ compiles, uninstrumented kernels",
)


@pytest.fixture(autouse=True)
def cpp_wrapper():
    torch._dynamo.reset()
    with inductor_config.patch(cpp_wrapper=True):
        yield
    torch._dynamo.reset()


def launched(fn):
    """(fn(), [(kind, name, device)] of the device work it issued)."""
    result, work = recorded_device_work(fn)
    return result, [(kind, name, device) for kind, name, device, _ in work]


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4), nn.LogSoftmax(-1))


def test_mlp_forward_kernels_launch_on_the_device():
    model = mlp()
    x = torch.randn(5, 8)
    expected = torch.compile(model)(x)
    device_model = mlp().to("openreg")
    compiled = torch.compile(device_model)
    (actual, work), code = run_and_get_cpp_code(
        lambda: launched(lambda: compiled(x.to("openreg"))))
    assert actual.device == torch.device("openreg:0")
    torch.testing.assert_close(actual.cpu(), expected)
    torch.testing.assert_close(actual.cpu(), model(x))
    kernels = [name for kind, name, _ in work if kind == "kernel"]
    assert any(name.startswith("cpp_fused_") for name in kernels), kernels
    assert "aten::addmm" in kernels, kernels  # the extern matmul, through openreg's C shim
    # Every generated kernel was launched through the execution layer, not called with
    # the device addresses of its tensors.
    assert "openreg_wrapper::launch(" in code and "aoti_torch_openreg_addmm_out" in code
    assert ".data_ptr()" not in code.split("inductor_entry_impl")[-1]


def test_training_step_matches_cpu():
    results = {}
    for device in ("cpu", "openreg"):
        model = mlp().to(device)
        compiled = torch.compile(model)
        torch.manual_seed(1)
        x = torch.randn(6, 8).to(device)
        target = torch.randint(0, 4, (6,)).to(device)
        loss = nn.functional.nll_loss(compiled(x), target)
        loss.backward()
        results[device] = [loss.detach().cpu()] + [p.grad.cpu() for p in model.parameters()]
    eager = mlp()
    torch.manual_seed(1)
    x, target = torch.randn(6, 8), torch.randint(0, 4, (6,))
    nn.functional.nll_loss(eager(x), target).backward()
    torch.testing.assert_close(results["openreg"], results["cpu"])
    torch.testing.assert_close(results["openreg"][1:], [p.grad for p in eager.parameters()])


@pytest.mark.parametrize("model_name", ["transformer_layer", "conv_net"])
def test_attention_and_convolution_training_step_matches_eager_cpu(model_name):
    # Attention returns integers too (max_q, max_k) and a convolution is an extern kernel:
    # both go through openreg's C shim (dispatch by name cannot return integers).
    def build():
        torch.manual_seed(0)
        if model_name == "transformer_layer":
            return (nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True),
                    torch.randn(2, 6, 32))
        return (nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                              nn.Flatten(), nn.Linear(4, 2)), torch.randn(2, 3, 10, 10))

    eager, x = build()
    eager(x).square().sum().backward()
    model, _ = build()
    model.to("openreg")
    (loss, work), code = run_and_get_cpp_code(
        lambda: launched(lambda: torch.compile(model)(x.to("openreg")).square().sum()))
    loss.backward()
    shim = {"transformer_layer": "_scaled_dot_product_fused_attention_overrideable",
            "conv_net": "convolution"}[model_name]
    assert f"aoti_torch_openreg_{shim}(" in code
    assert any(name.startswith("cpp_fused_") for kind, name, _ in work if kind == "kernel")
    torch.testing.assert_close(loss.cpu(), eager(x).square().sum())
    torch.testing.assert_close([p.grad.cpu() for p in model.parameters()],
                               [p.grad for p in eager.parameters()])


def test_second_device_sizes_as_arguments_allocator_and_a_fallback_operator():
    # topk has no openreg C shim: the wrapper dispatches it by name. With dynamic shapes
    # the kernels also take sizes (int64_t scalars).
    fn = torch.compile(lambda x: torch.topk((x * 2).sin(), 3).values + 1, dynamic=True)
    x = torch.randn(4, 64)
    device_x = x.to("openreg:1")
    fn(device_x)
    torch.openreg.synchronize()
    before = torch.openreg.memory_allocated(1)
    result, work = launched(lambda: fn(device_x))
    assert result.device == torch.device("openreg:1")
    # The wrapper's buffers (its output at least) come from openreg's caching allocator.
    assert torch.openreg.memory_allocated(1) - before >= result.untyped_storage().nbytes()
    torch.testing.assert_close(result.cpu(), torch.topk((x * 2).sin(), 3).values + 1)
    devices = {device for kind, name, device in work if name.startswith("cpp_fused_")}
    assert devices == {1}, work
    assert ("kernel", "aten::topk", 1) in work, work
    other = torch.randn(7, 64)  # the same graph, other sizes
    torch.testing.assert_close(fn(other.to("openreg:1")).cpu(),
                               torch.topk((other * 2).sin(), 3).values + 1)


def test_scatter_reduce_fallback_runs_through_the_device_generic_shim():
    # torch writes it as a call of aoti_torch_<device>_scatter_reduce_two_out, which exists
    # for its own devices only.
    def fn(x, index, src):
        return x.scatter_reduce(0, index, src, "amax", include_self=False) * 2

    args = (torch.ones(5), torch.tensor([0, 1, 1, 3]), torch.randn(4))
    actual = torch.compile(fn)(*(a.to("openreg") for a in args))
    torch.testing.assert_close(actual.cpu(), fn(*args))


def _c_api():
    library = ctypes.CDLL(os.path.join(os.path.dirname(openreg_torch.__file__), "lib",
                                       "libopenreg_torch.so"), mode=os.RTLD_NOLOAD)
    address_of = library.openreg_kernel_argument_address
    address_of.restype = ctypes.c_char_p
    address_of.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32), ctypes.c_char_p,
                           ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p)]
    return address_of


def _pointer(capsule):
    """The AtenTensorHandle in a capsule of torch._C._aoti."""
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return get_pointer(capsule, None)


def test_kernel_arguments_on_two_devices_are_a_clear_error():
    address_of = _c_api()
    tensors = [torch.ones(4, device="openreg:0"), torch.ones(4, device="openreg:1"),
               torch.ones(4, device="meta")]
    capsules = torch._C._aoti.unsafe_alloc_void_ptrs_from_tensors(tensors)
    handles = [_pointer(capsule) for capsule in capsules]
    try:
        device, address = ctypes.c_int32(-1), ctypes.c_void_p()
        assert address_of(handles[0], device, b"cpp_fused_k", 0, address) is None
        assert device.value == 0
        assert address.value not in (None, tensors[0].data_ptr())  # the kernel view
        error = address_of(handles[1], device, b"cpp_fused_k", 1, address)
        assert b"cpp_fused_k got tensors on openreg:0 and openreg:1" in error
        error = address_of(handles[2], device, b"cpp_fused_k", 2, address)
        assert b"got a tensor on meta for argument 2" in error
    finally:
        torch._C._aoti.alloc_tensors_by_stealing_from_void_ptrs(capsules)


# --- AOTInductor -------------------------------------------------------------------------

# AOTInductor cannot precompile a header for openreg (see wrapper_cpp.py).
AOTI_CONFIGS = {"aot_inductor.precompile_headers": False}


class TopOfMLP(nn.Module):
    """An MLP's three largest outputs: matrix multiplies (openreg's C shim), a generated
    kernel and topk (no shim: the proxy executor dispatches it by name)."""

    def __init__(self):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))

    def forward(self, x):
        return torch.topk(self.mlp(x), 3).values


@pytest.fixture(scope="module")
def aoti_package(tmp_path_factory):
    """(package path, eager CPU model, input): TopOfMLP compiled for openreg:0."""
    torch.manual_seed(0)
    model = TopOfMLP()
    x = torch.randn(5, 8)
    device_model = TopOfMLP()
    device_model.load_state_dict(model.state_dict())
    program = torch.export.export(device_model.to("openreg"), (x.to("openreg"),))
    path = torch._inductor.aoti_compile_and_package(
        program, package_path=str(tmp_path_factory.mktemp("aoti") / "mlp.pt2"),
        inductor_configs=AOTI_CONFIGS)
    return path, model, x


@pytest.mark.parametrize("index", [0, 1])
def test_aoti_package_runs_on_openreg(aoti_package, index):
    path, model, x = aoti_package
    loaded = torch._inductor.aoti_load_package(path, device_index=index)
    device_x = x.to(f"openreg:{index}")
    torch.openreg.synchronize()
    before = torch.openreg.memory_allocated(index)
    first, work = launched(lambda: loaded(device_x))
    # The first run copied the weights (212 floats) to the device, next to its output.
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    assert torch.openreg.memory_allocated(index) - before >= weights
    second = loaded(device_x)
    assert first.device == second.device == torch.device(f"openreg:{index}")
    torch.testing.assert_close(first.cpu(), model(x))
    torch.testing.assert_close(second.cpu(), model(x))
    kernels = [(name, device) for kind, name, device in work if kind == "kernel"]
    assert ("aten::addmm", index) in kernels, kernels
    assert ("aten::topk", index) in kernels, kernels
    assert any(name.startswith("cpp_fused_") and device == index for name, device in kernels)


def test_aoti_loading_on_a_missing_device_is_a_clear_error(aoti_package, tmp_path, monkeypatch):
    # PyTorch's package loader leaves the directory it extracted the package to (under
    # TMPDIR) when the runner's constructor throws: here, in this test's own directory.
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with pytest.raises(RuntimeError, match="no device openreg:7"):
        torch._inductor.aoti_load_package(aoti_package[0], device_index=7)


def test_aoti_with_a_precompiled_header_is_a_clear_error(tmp_path):
    program = torch.export.export(nn.Linear(4, 3).to("openreg"),
                                  (torch.randn(2, 4, device="openreg"),))
    with pytest.raises(Exception, match="aot_inductor.precompile_headers"):
        torch._inductor.aoti_compile_and_package(program,
                                                 package_path=str(tmp_path / "model.pt2"))
