"""Device management: torch.openreg's mapping of the C++ device functions."""

import pytest
import torch

import openreg_torch


def test_device_count_follows_environment(run_python):
    assert torch.openreg.device_count() == 2
    result = run_python("import torch; print(torch.openreg.device_count())",
                        env={"OPENREG_DEVICE_COUNT": "3"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "3"


def test_set_and_current_device():
    torch.openreg.set_device(1)
    assert torch.openreg.current_device() == 1
    assert torch.empty(1, device="openreg").device == torch.device("openreg", 1)
    torch.openreg.set_device("openreg:0")
    assert torch.openreg.current_device() == 0


@pytest.mark.parametrize("index", [2, 7, -2])
def test_invalid_device_index_names_valid_range(index):
    with pytest.raises((ValueError, RuntimeError), match=r"valid indices are 0\.\.1"):
        torch.openreg.set_device(index)
    assert torch.openreg.current_device() == 0


def test_invalid_index_in_cpp_functions_names_range():
    with pytest.raises(RuntimeError, match=r"invalid device index 5.*valid indices are 0\.\.1"):
        openreg_torch._C._set_device(5)
    with pytest.raises(RuntimeError, match=r"valid indices are 0\.\.1"):
        openreg_torch._C._exchange_device(2)


def test_exchange_and_maybe_exchange_device():
    assert openreg_torch._C._exchange_device(1) == 0
    assert torch.openreg.current_device() == 1
    # -1 leaves the device alone and reports the current one.
    assert openreg_torch._C._maybe_exchange_device(-1) == 1
    assert torch.openreg.current_device() == 1
    assert openreg_torch._C._maybe_exchange_device(0) == 1
    assert torch.openreg.current_device() == 0


def test_wrong_device_type_is_rejected():
    with pytest.raises(ValueError, match="Expected an openreg device"):
        torch.openreg.set_device("cpu")
    with pytest.raises(TypeError):
        torch.openreg.set_device(1.5)


def test_tensor_on_invalid_device_index():
    with pytest.raises(RuntimeError, match=r"invalid device index 3"):
        torch.empty(2, device="openreg:3")


def test_device_context_manager_restores_on_exception():
    with pytest.raises(KeyError):
        with torch.openreg.device(1):
            assert torch.openreg.current_device() == 1
            raise KeyError("boom")
    assert torch.openreg.current_device() == 0


def test_device_of_tensor():
    tensor = torch.ones(2, device="openreg:1")
    with torch.openreg.device_of(tensor):
        assert torch.openreg.current_device() == 1
    with torch.openreg.device_of(torch.ones(2)):
        assert torch.openreg.current_device() == 0


def test_torch_device_guard_switches_device():
    with torch.device("openreg:1"):
        assert torch.empty(1).device == torch.device("openreg:1")


def test_accelerator_api():
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator() == torch.device("openreg")
    assert torch.accelerator.device_count() == 2
    torch.accelerator.set_device_index(1)
    assert torch.accelerator.current_device_index() == 1
    with torch.accelerator.device_index(0):
        assert torch.openreg.current_device() == 0
    assert torch.openreg.current_device() == 1
    torch.accelerator.synchronize()


def test_device_properties():
    props = torch.openreg.get_device_properties(1)
    assert props.total_memory > 0
    assert "openreg" in props.name
    assert torch.openreg.get_device_name() == props.name


def test_is_available_does_not_initialise(run_python):
    result = run_python(
        """
        import torch
        assert torch.openreg.is_available()
        assert not torch.openreg.is_initialized()
        torch.openreg.init()
        assert torch.openreg.is_initialized()
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_openreg_get_device_capability_is_major_minor():
    for index in range(torch.openreg.device_count()):
        props = torch.openreg.get_device_properties(index)
        capability = torch.openreg.get_device_capability(index)
        assert capability == (props.major, props.minor)
        assert all(isinstance(part, int) for part in capability)
    assert torch.openreg.get_device_capability() == torch.openreg.get_device_capability(0)
    with pytest.raises(ValueError, match="valid indices are 0"):
        torch.openreg.get_device_capability(torch.openreg.device_count())


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
@pytest.mark.filterwarnings("ignore:Casting complex values to real")
def test_accelerator_get_device_capability_lists_dtypes_openreg_can_hold():
    capability = torch.accelerator.get_device_capability()
    dtypes = capability["supported_dtypes"]
    assert torch.accelerator.get_device_capability("openreg:1") == capability
    expected = {torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
                torch.bool, torch.complex64, torch.float8_e4m3fn, torch.float8_e8m0fnu,
                torch.uint16}
    assert expected <= dtypes
    assert not {torch.qint8, torch.bits8, torch.uint4, torch.float4_e2m1fn_x2} & dtypes
    # The contract: tensors of these dtypes can be allocated, and converted into each
    # other, on the device; the results are the CPU's.
    source = torch.tensor([0.0, 1.0, 2.0, 3.0])
    for from_dtype in sorted(dtypes, key=str):
        host = source.to(from_dtype)
        device = host.to("openreg")
        assert device.dtype == from_dtype
        for to_dtype in dtypes:
            # Compared bit for bit: assert_close cannot compare every dtype here.
            actual = device.to(to_dtype).cpu().view(torch.uint8)
            assert torch.equal(actual, host.to(to_dtype).view(torch.uint8)), (from_dtype,
                                                                               to_dtype)


def test_torch_openreg_submodules_are_the_loaded_modules():
    # As `import torch.cuda.memory`: torch registers the device module alone, and such an
    # import once ran the file again as a second, unconnected copy (memory_allocated()
    # answered 0, manual_seed was dropped, torch.openreg.memory was replaced for everyone).
    import importlib

    import openreg_torch.openreg as device_module

    for name in ("memory", "random", "streams", "tensor_meta"):
        assert importlib.import_module(f"torch.openreg.{name}") is getattr(device_module, name)
    from torch.openreg.memory import memory_allocated
    from torch.openreg.random import initial_seed, manual_seed

    held = torch.ones(256, device="openreg")
    assert memory_allocated() == torch.openreg.memory_allocated() >= held.nbytes
    state = torch.openreg.get_rng_state()
    try:
        manual_seed(5)
        assert initial_seed() == torch.openreg.initial_seed() == 5
    finally:
        torch.openreg.set_rng_state(state)
    assert torch.openreg.memory is device_module.memory
