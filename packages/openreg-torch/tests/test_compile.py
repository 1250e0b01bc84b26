"""torch.compile on openreg: Dynamo traces openreg tensors, Inductor generates its C++ CPU
kernels for them and the wrapper launches each one through the execution layer on the
current openreg stream (openreg_torch/_inductor, csrc/execution/CompiledKernel).

Every result is compared with the same compiled function on the CPU and with eager CPU.
Compiles are the expensive part (seconds each on a loaded machine): models are tiny and
each compiled function is compiled once per test. Inductor's cache lives under the tox
env dir (TORCHINDUCTOR_CACHE_DIR in tox.ini), so a rerun reuses the compiled kernels.
"""

import os
import textwrap

import pytest
import torch
import torch._dynamo
import torch._dynamo.testing
import torch._inductor.config as inductor_config
from torch import nn

import openreg_torch
from openreg_torch.testing import recorded_device_work
from openreg_torch.openreg.streams import _sleep

# Not in the py311-sanitize env: Inductor compiles its C++ in compiler processes that
# inherit the sanitizer preload (about a third of the env's test time), and the kernels it
# generates are built uninstrumented anyway, so the sanitizers would see only the launch
# path the eager suites run too.
pytestmark = pytest.mark.skipif(
    os.environ.get("OPENREG_EXPECT_SANITIZERS") == "1",
    reason="not under the sanitizers: Inductor's C++ compiles, uninstrumented kernels",
)

EXPECT_EXTRA = os.environ.get("OPENREG_EXPECT_EXTRA") == "1"


@pytest.fixture(autouse=True)
def fresh_dynamo():
    """Each test compiles for itself (Dynamo's frame cache is per code object)."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def launched_kernels(fn):
    """(result of fn(), names of the kernels it launched on openreg devices)."""
    result, work = recorded_device_work(fn)
    return result, [name for kind, name, _, _ in work if kind == "kernel"]


def to_openreg(module, device="openreg"):
    import copy

    return copy.deepcopy(module).to(device)


def compare_compiled(module, *inputs, atol=None, rtol=None, **compile_kwargs):
    """Compiles module on the CPU and (a copy) on openreg, runs both, compares with each
    other and with eager CPU. Returns the openreg kernels launched."""
    device_module = to_openreg(module)
    expected_eager = module(*inputs)
    cpu_compiled = torch.compile(module, **compile_kwargs)
    openreg_compiled = torch.compile(device_module, **compile_kwargs)
    expected = cpu_compiled(*inputs)
    device_inputs = [x.to("openreg") for x in inputs]
    actual, kernels = launched_kernels(lambda: openreg_compiled(*device_inputs))
    assert actual.device.type == "openreg"
    close = {} if atol is None else {"atol": atol, "rtol": rtol}
    torch.testing.assert_close(actual.cpu(), expected, **close)
    torch.testing.assert_close(actual.cpu(), expected_eager, **close)
    return kernels


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4), nn.LogSoftmax(-1))


# --- Dynamo -------------------------------------------------------------------------

def test_dynamo_knows_openreg_from_its_import():
    from torch._dynamo.device_interface import get_interface_for_device

    interface = get_interface_for_device("openreg")
    assert interface.Stream is torch.openreg.Stream
    assert interface.Event is torch.openreg.Event
    assert get_interface_for_device(torch.device("openreg", 1)) is interface
    assert interface.current_device() == torch.openreg.current_device()
    # What compile workers read must not start the runtime.
    assert interface.Worker.get_device_properties().multi_processor_count >= 1


def test_registration_is_lazy_and_leaves_cpu_programs_alone(run_python):
    # `import torch` loads neither Dynamo nor Inductor; importing Dynamo registers openreg.
    # (Tracing a CPU function does start the openreg runtime, as it would start CUDA's:
    # Dynamo asks torch.accelerator for the current stream of every frame it traces.)
    result = run_python(
        """
        import sys
        import torch
        print("dynamo imported:", "torch._dynamo" in sys.modules,
              "inductor imported:", "torch._inductor" in sys.modules)
        from torch._dynamo.device_interface import device_interfaces
        print("registered:", "openreg" in device_interfaces)
        out = torch.compile(lambda x: x.sin() + 1)(torch.ones(3))
        print("cpu result:", out.tolist() == (torch.ones(3).sin() + 1).tolist())
        """,
        timeout=240,
    )
    assert "dynamo imported: False inductor imported: False" in result.stdout, result
    assert "registered: True" in result.stdout, result
    assert "cpu result: True" in result.stdout, result


def test_user_streams_inside_a_compiled_graph():
    stream = torch.openreg.Stream()

    def fn(x):
        with stream:
            y = x * 2
        torch.accelerator.current_stream(x.device).wait_stream(stream)
        return y + 1

    x = torch.randn(4, device="openreg")
    explanation = torch._dynamo.explain(fn)(x)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(fn)(x).cpu(), x.cpu() * 2 + 1)


@pytest.mark.parametrize("query", [
    lambda: torch.openreg.device_count(),
    lambda: int(torch.openreg.is_available()),
    lambda: torch.openreg.get_device_properties(1).multi_processor_count,
    lambda: torch.openreg.get_device_capability()[0],
    lambda: len(torch.openreg.get_device_name(0)),
], ids=["device_count", "is_available", "get_device_properties", "get_device_capability",
        "get_device_name"])
def test_device_queries_fold_to_constants_in_a_full_graph(query):
    # As torch.cuda.is_available and get_device_properties do (they failed: "Attempted to
    # call function marked as skipped").
    x = torch.ones(3, device="openreg")
    fn = torch.compile(lambda x: x + query(), fullgraph=True, backend="eager")
    torch.testing.assert_close(fn(x).cpu(), x.cpu() + query())


# --- Inductor: kernels on the device ---------------------------------------------------

def test_mlp_kernels_launch_through_the_execution_layer():
    kernels = compare_compiled(mlp(), torch.randn(5, 8))
    generated = [name for name in kernels if name.startswith("cpp_")]
    assert generated, kernels  # Inductor's fused kernels ran as openreg launches
    assert "aten::addmm" in kernels or "aten::mm" in kernels  # extern kernels too


def test_compiled_kernels_are_ordered_on_the_current_stream():
    fn = torch.compile(lambda x: (x.sin() + 1).sum(0))
    x = torch.zeros(64, 8, device="openreg")
    fn(x)  # compiled on the default stream
    source = torch.randn(64, 8).pin_memory()
    side = torch.openreg.Stream()
    with torch.openreg.stream(side):
        _sleep(50)  # the side stream is busy: the copy below waits, the host does not
        x.copy_(source, non_blocking=True)
        # Launched on the side stream, the kernel reads x only once the copy is done.
        result = fn(x)
    torch.openreg.synchronize()
    torch.testing.assert_close(result.cpu(), (source.sin() + 1).sum(0))


def test_buffers_come_from_the_caching_allocator():
    fn = torch.compile(lambda x: (x * 2).relu().sum(1, keepdim=True) + x)
    x = torch.randn(64, 64, device="openreg")
    fn(x)
    torch.openreg.synchronize()
    before = torch.openreg.memory_stats()["allocation.all.allocated"]
    result = fn(x)
    after = torch.openreg.memory_stats()["allocation.all.allocated"]
    assert after > before  # its output (at least) was allocated by openreg's allocator
    torch.testing.assert_close(result.cpu(), (x.cpu() * 2).relu().sum(1, keepdim=True) + x.cpu())


def test_transformer_encoder_layer():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0,
                                       batch_first=True).eval()
    compare_compiled(layer, torch.randn(2, 5, 16), atol=1e-4, rtol=1e-4)


def test_conv_net():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 3)).eval()
    compare_compiled(net, torch.randn(2, 3, 8, 8), atol=1e-4, rtol=1e-4)


def test_conv_net_inference_with_inductor_layout_optimisation():
    # Under no_grad Inductor makes convolution inputs channels_last and plans the results
    # with the fake kernel's strides (contiguous for a PrivateUse1 convolution).
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(),
                        nn.ConvTranspose2d(4, 2, 3, stride=2)).eval()
    with torch.no_grad():
        compare_compiled(net, torch.randn(2, 3, 8, 8), atol=1e-4, rtol=1e-4)


def test_convolution_strides_are_those_of_the_fake_kernel():
    from torch._subclasses.fake_tensor import FakeTensorMode

    x = torch.randn(2, 3, 8, 8, device="openreg").to(memory_format=torch.channels_last)
    w = torch.randn(4, 3, 3, 3, device="openreg").to(memory_format=torch.channels_last)
    args = ([1, 1], [1, 1], [1, 1], False, [0, 0], 1)

    def strides(x, w):
        out = torch.ops.aten.convolution(x, w, None, *args)
        grads = torch.ops.aten.convolution_backward(out, x, w, [4], *args, [True, True, True])
        return [t.stride() for t in (out, *grads)]

    mode = FakeTensorMode()
    fake_x, fake_w = mode.from_tensor(x), mode.from_tensor(w)
    with mode:
        expected = strides(fake_x, fake_w)
    assert strides(x, w) == expected


def test_control_flow_subgraphs_launch_openreg_kernels():
    # The branches of torch.cond and the body of while_loop are subgraphs with wrappers of
    # their own (they used to fail with "device openreg nyi").
    from torch._higher_order_ops import while_loop

    def f(x):
        y = torch.cond(x.sum() > 0, lambda a: a.sin() * 2, lambda a: a.cos(), (x,))
        return while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2 + 1),
                          (torch.tensor(0, device=x.device), y))[1]

    x = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
    actual, kernels = launched_kernels(lambda: torch.compile(f, fullgraph=True)(x.to("openreg")))
    torch.testing.assert_close(actual.cpu(), f(x))
    assert any(name.startswith("cpp_fused") for name in kernels), kernels


# --- training ------------------------------------------------------------------------

def test_training_step_forward_backward_and_compiled_optimizer():
    results = {}
    for device in ("cpu", "openreg"):
        model = mlp().to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        compiled = torch.compile(model)

        @torch.compile
        def step():
            optimizer.step()

        torch.manual_seed(1)
        x = torch.randn(6, 8).to(device)
        target = torch.randint(0, 4, (6,)).to(device)
        for _ in range(2):
            optimizer.zero_grad()
            loss = nn.functional.nll_loss(compiled(x), target)
            loss.backward()
            step()
        results[device] = [loss.detach().cpu()] + [p.detach().cpu() for p in model.parameters()]
    torch.testing.assert_close(results["openreg"], results["cpu"], atol=1e-5, rtol=1e-4)


# --- shapes, modes, devices ----------------------------------------------------------

def test_dynamic_true_one_graph_for_every_batch():
    counter = torch._dynamo.testing.CompileCounterWithBackend("inductor")
    fn = torch.compile(lambda x: torch.softmax(x * 3, -1), backend=counter, dynamic=True)
    for batch in (2, 3, 7):
        x = torch.randn(batch, 6)
        torch.testing.assert_close(fn(x.to("openreg")).cpu(), torch.softmax(x * 3, -1))
    assert counter.frame_count == 1


def test_attention_with_dynamic_shapes():
    # The SDPA choice is made on the fake tensors of the trace (symbolic sizes).
    fn = torch.compile(lambda q: torch.nn.functional.scaled_dot_product_attention(q, q, q),
                       dynamic=True)
    for length in (5, 7):
        q = torch.randn(2, 2, length, 8)
        torch.testing.assert_close(fn(q.to("openreg")).cpu(),
                                   torch.nn.functional.scaled_dot_product_attention(q, q, q))


def test_automatic_dynamic_shapes_recompile_once():
    counter = torch._dynamo.testing.CompileCounterWithBackend("inductor")
    fn = torch.compile(lambda x: (x.cos() * 2).sum(-1), backend=counter)
    for batch in (2, 3, 4):
        x = torch.randn(batch, 5)
        torch.testing.assert_close(fn(x.to("openreg")).cpu(), (x.cos() * 2).sum(-1))
    assert counter.frame_count == 2  # static, then one dynamic graph


def test_fullgraph():
    compare_compiled(mlp(), torch.randn(3, 8), fullgraph=True)


def test_reduce_overhead_runs_without_graphs():
    # openreg has no graphs to capture: Inductor runs the compiled code as is.
    compare_compiled(mlp(), torch.randn(3, 8), mode="reduce-overhead")


def test_max_autotune_no_cudagraphs():
    compare_compiled(mlp(), torch.randn(3, 8), mode="max-autotune-no-cudagraphs")


def test_recompiles_for_another_device():
    counter = torch._dynamo.testing.CompileCounterWithBackend("inductor")
    fn = torch.compile(lambda x: x.tanh() * x, backend=counter)
    for index in (0, 1):
        x = torch.randn(8, device=f"openreg:{index}")
        result = fn(x)
        assert result.device == x.device
        torch.testing.assert_close(result.cpu(), x.cpu().tanh() * x.cpu())
    assert counter.frame_count == 2


@pytest.mark.skipif(not EXPECT_EXTRA, reason="openreg-ops-extra is not installed")
def test_custom_op_in_a_compiled_graph():
    fn = torch.compile(lambda x: torch.ops.openreg.custom_abs(x * 2) + 1, fullgraph=True)
    x = torch.randn(10)
    torch.testing.assert_close(fn(x.to("openreg")).cpu(), (x * 2).abs() + 1)


# --- caches and unsupported paths ----------------------------------------------------

def test_a_second_process_reuses_the_compiled_code(run_python, tmp_path):
    script = textwrap.dedent(
        """
        import torch
        from torch._dynamo.utils import counters
        fn = torch.compile(lambda x: (x * x + 1).sum())
        x = torch.arange(6.0, device="openreg")
        print("result", fn(x).item())
        print("hits", counters["inductor"]["fxgraph_cache_hit"])
        """
    )
    env = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    first = run_python(script, env=env, timeout=240)
    second = run_python(script, env=env, timeout=240)
    assert "result 61.0" in first.stdout and "hits 0" in first.stdout, first
    assert "result 61.0" in second.stdout and "hits 1" in second.stdout, second


# --- the launcher, directly ------------------------------------------------------------

SCALE_SOURCE = r'''
#include <cstdint>
extern "C" void kernel(const float* in_ptr0, float* out_ptr0, const int64_t ks0,
                       const float ks1) {
    for (int64_t i = 0; i < ks0; ++i) {
        out_ptr0[i] = in_ptr0[i] * ks1;
    }
}
'''
SCALE_TYPES = ["const float*", "float*", "const int64_t", "const float"]


@pytest.fixture(scope="module")
def scale_kernel():
    from torch._inductor.async_compile import AsyncCompile

    from openreg_torch._inductor.kernel_launch import openreg_cpp_kernel

    with inductor_config.patch(compile_threads=1):
        return openreg_cpp_kernel(AsyncCompile(), "test_scale", SCALE_TYPES, SCALE_SOURCE)


def test_launcher_passes_pointers_ints_and_floats(scale_kernel):
    x = torch.arange(6.0, device="openreg")
    out = torch.zeros(6, device="openreg")
    _, kernels = launched_kernels(lambda: scale_kernel(x, out, 4, 2.5))
    assert kernels == ["test_scale"]
    torch.testing.assert_close(out.cpu(), torch.tensor([0.0, 2.5, 5.0, 7.5, 0.0, 0.0]))
    # A view's address includes its storage offset, as the CPU binding's does.
    scale_kernel(x[2:], out[1:], 2, -1.0)
    torch.testing.assert_close(out.cpu()[1:3], torch.tensor([-2.0, -3.0]))


def test_launcher_rejects_bad_arguments(scale_kernel):
    x = torch.arange(4.0, device="openreg")
    with pytest.raises(RuntimeError, match="takes 4 arguments, got 3"):
        scale_kernel(x, x, 4)
    with pytest.raises(TypeError, match="expected a tensor for argument 1, got int"):
        scale_kernel(x, 7, 4, 1.0)
    with pytest.raises(RuntimeError, match="got a tensor on meta for argument 0"):
        scale_kernel(torch.empty(4, device="meta"), x, 4, 1.0)
    with pytest.raises(RuntimeError, match="got tensors on openreg:0 and openreg:1"):
        scale_kernel(x, torch.empty(4, device="openreg:1"), 4, 1.0)
    with pytest.raises(RuntimeError, match="argument kind must be p, i or f"):
        openreg_torch._C._CompiledKernel("bad", scale_kernel_library(scale_kernel), "px")
    with pytest.raises(RuntimeError, match="is not loaded"):
        openreg_torch._C._CompiledKernel("bad", "/nonexistent/kernel.so", "p")
    with pytest.raises(NotImplementedError, match="C\\+\\+ type 'const double' is not"):
        from openreg_torch._inductor.kernel_launch import argument_kinds

        argument_kinds(["const double"])


def scale_kernel_library(kernel):
    """The library a launcher was made from: a loaded kernel module with the entry."""
    import ctypes
    import sys

    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None) or ""
        if (name.endswith(".kernel") and path.endswith(".so")
                and hasattr(ctypes.CDLL(path), "openreg_kernel_entry")):
            return path
    raise LookupError("no openreg kernel library is loaded")
