"""Bad input at the torch surface: every case raises a Python exception whose message names
what was wrong and, where there is one, the valid choice; nothing crashes and the device
keeps working. Cases already covered by packages/openreg-torch/tests (set_device with an
out-of-range index, "cpu" or a float; a tensor on openreg:3; a CPU generator for a device
op; events recorded on another device's stream; OOM under a small OPENREG_DEVICE_MEMORY)
are not repeated here.
"""

import re

import pytest
import torch

openreg = torch.openreg
VALID = r"valid indices are 0\.\.1"


@pytest.fixture(autouse=True)
def device_still_works():
    yield
    assert (torch.ones(3, device="openreg") * 2).sum().item() == 6.0
    assert openreg.current_device() == 0


# ---------------------------------------------------------------------- device arguments

@pytest.mark.parametrize("call", [
    openreg.set_device, openreg.synchronize, openreg.get_device_properties,
    openreg.memory_stats, openreg.memory_allocated, openreg.memory_reserved,
    openreg.max_memory_allocated, openreg.reset_peak_memory_stats, openreg.mem_get_info,
    openreg.current_stream, openreg.default_stream, openreg.default_generator,
    openreg.get_rng_state, openreg.device,
], ids=lambda call: call.__name__)
@pytest.mark.parametrize("device, error, message", [
    (7, ValueError, VALID),
    (-2, ValueError, VALID),
    ("openreg:5", ValueError, VALID),
    (torch.device("openreg", 2), ValueError, VALID),
    ("x", ValueError, r"got 'x': valid are 'openreg' and 'openreg:N', N in 0\.\.1"),
    ("openreg:-1", ValueError, r"got 'openreg:-1': valid are 'openreg' and 'openreg:N'"),
    ("cuda:0", ValueError, "Expected an openreg device, got cuda:0"),
    (1.0, TypeError, "Expected an openreg device index \\(int\\), got float"),
    (True, TypeError, "got bool"),
])
def test_every_device_argument_is_checked(call, device, error, message):
    with pytest.raises(error, match=message):
        call(device)


def test_negative_device_strings_are_rejected_by_torch():
    with pytest.raises(RuntimeError, match="Invalid device string: 'openreg:-1'"):
        torch.device("openreg:-1")
    with pytest.raises(RuntimeError, match="Device index must not be negative"):
        torch.device("openreg", -1)
    with pytest.raises(RuntimeError, match="Invalid device string: 'openreg:-1'"):
        torch.empty(2, device="openreg:-1")


@pytest.mark.parametrize("make", [
    lambda: torch.Stream(device="openreg:5"),
    lambda: torch.Generator(device="openreg:5"),
    lambda: torch.ones(2).to("openreg:9"),
    lambda: torch.accelerator.memory.memory_allocated(7),
    lambda: torch.accelerator.set_device_index(2),
], ids=["Stream", "Generator", "to", "accelerator.memory", "accelerator.device"])
def test_torch_apis_check_the_index_too(make):
    with pytest.raises(RuntimeError, match=VALID):
        make()


# ------------------------------------------------------------------------ streams, events

def test_stream_arguments_are_checked():
    with pytest.raises(ValueError, match=VALID):
        openreg.Stream(device=5)
    with pytest.raises(ValueError, match="Expected an openreg device, got cpu"):
        openreg.Stream(device="cpu")
    with pytest.raises(TypeError, match="'priority' must be int, not str"):
        openreg.Stream(priority="high")
    with pytest.raises(TypeError, match="'enable_timing' must be bool, not str"):
        openreg.Event(enable_timing="yes")


@pytest.mark.parametrize("call", [
    openreg.set_stream, openreg.stream, openreg.Event().record, openreg.Event().wait,
], ids=["set_stream", "stream", "Event.record", "Event.wait"])
def test_a_stream_argument_must_be_an_openreg_stream(call):
    with pytest.raises(TypeError, match=r"expects an openreg stream .*got 'x'"):
        call("x")
    with pytest.raises(TypeError, match="expects an openreg stream .*got 5"):
        call(5)
    with pytest.raises(ValueError, match="expects an openreg stream, got a stream on cpu"):
        call(torch.Stream(device="cpu"))


def test_device_of_needs_a_tensor():
    with pytest.raises(TypeError, match="device_of expects a tensor, got str"):
        openreg.device_of("openreg:1")


# --------------------------------------------------------------------------------- seeds

# By name, looked up when the test runs: once torch._dynamo is imported (an earlier test
# compiling something), torch.manual_seed is a wrapper, not the function collected here.
@pytest.mark.parametrize("name", ["openreg.manual_seed", "openreg.manual_seed_all",
                                  "torch.manual_seed"])
def test_seeds_are_checked(name):
    module, function = name.split(".")
    call = getattr(openreg if module == "openreg" else torch, function)
    state = openreg.get_rng_state()
    if module == "openreg":  # torch converts with int() before we see the seed
        with pytest.raises(ValueError, match="a seed must be an integer, got 'abc'"):
            call("abc")
        with pytest.raises(TypeError, match="a seed must be an integer, got None"):
            call(None)
    for seed in (2**64, -(2**63) - 1, 2**70):
        with pytest.raises(ValueError, match=rf"seed {seed} is out of range: .*\[-2\*\*63, "
                                             r"2\*\*64 - 1\]"):
            call(seed)
    assert torch.equal(openreg.get_rng_state(), state)  # nothing was seeded
    for seed in (2**64 - 1, -(2**63)):  # the ends of the range are valid
        call(seed)


def test_rng_state_is_checked_when_set():
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        openreg.set_rng_state(torch.zeros(5056))
    with pytest.raises(RuntimeError, match="Expected a CPUGeneratorImplState of size 5056"):
        openreg.set_rng_state(torch.zeros(3, dtype=torch.uint8))


def test_bad_seed_before_initialisation_fails_at_once(run_python):
    # Seeding before initialisation is queued: a bad seed queued there would make the first
    # use of the device fail instead, far from the call that was wrong.
    result = run_python("""
        import torch
        for call, bad in [(torch.manual_seed, 2**70), (torch.openreg.manual_seed, -2**64),
                          (torch.openreg.set_rng_state, torch.zeros(3, dtype=torch.uint8))]:
            try:
                call(bad)
            except (ValueError, RuntimeError) as error:
                print(type(error).__name__, error)
            else:
                raise AssertionError(f"{call.__name__}({bad!r}) was accepted")
        assert not torch.openreg.is_initialized()
        print((torch.ones(3, device="openreg") * 2).tolist())
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "ValueError openreg: seed 1180591620717411303424 is out of range: seeds are "
        "integers in [-2**63, 2**64 - 1]",
        "ValueError openreg: seed -18446744073709551616 is out of range: seeds are "
        "integers in [-2**63, 2**64 - 1]",
        "RuntimeError Expected a CPUGeneratorImplState of size 5056 but found the input RNG "
        "state size to be 3",
        "[2.0, 2.0, 2.0]",
    ]


# ---------------------------------------------------------------------------- sizes, OOM

@pytest.mark.parametrize("make", [
    lambda: torch.empty(-1, device="openreg"),
    lambda: torch.zeros((2, -3), device="openreg"),
    lambda: torch.full((-1,), 2.0, device="openreg"),
    lambda: torch.randn(-5, device="openreg"),
    lambda: torch.empty_strided((-2, 3), (3, 1), device="openreg"),
    lambda: torch.ones(2, device="openreg").new_empty(-1),
], ids=["empty", "zeros", "full", "randn", "empty_strided", "new_empty"])
def test_negative_sizes_are_rejected(make):
    with pytest.raises(RuntimeError, match="negative dimension|must be non-negative"):
        make()


@pytest.mark.parametrize("device", ["openreg:0", "openreg:1"])
@pytest.mark.parametrize("make, amount", [
    (lambda d: torch.empty(2**40, dtype=torch.uint8, device=d), "1024.00 GiB"),
    (lambda d: torch.empty((2**20, 2**20), device=d), "4096.00 GiB"),
    (lambda d: torch.ones(2, device=d).resize_(2**40), "4096.00 GiB"),
    (lambda d: torch.ones(1, device=d).expand(2**20, 2**20).contiguous(), "4096.00 GiB"),
    (lambda d: torch.arange(2**40, device=d), "8192.00 GiB"),
], ids=["empty", "empty-2d", "resize_", "in-a-kernel", "arange"])
def test_huge_allocations_raise_out_of_memory_with_figures(device, make, amount):
    index = torch.device(device).index
    allocated = openreg.memory_allocated(index)
    ooms = openreg.memory_stats(index)["num_ooms"]
    with pytest.raises(torch.OutOfMemoryError) as raised:
        make(device)
    message = str(raised.value)
    assert f"Tried to allocate {amount} on device {index} ({device})" in message, message
    assert "total capacity of" in message and "is free" in message, message
    assert "OPENREG_DEVICE_MEMORY" in message, message
    assert openreg.memory_stats(index)["num_ooms"] == ooms + 1
    assert openreg.memory_allocated(index) == allocated


def test_storage_overflow_is_rejected_before_allocating():
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
        torch.empty(2**61, dtype=torch.float32, device="openreg")


def test_storage_resize_to_a_negative_size_is_refused(run_python):
    # In a fresh interpreter: the defect leaves this process's allocator statistics wrong.
    result = run_python("""
        import torch
        for size in (0, 16):
            storage = torch.arange(size, dtype=torch.uint8, device="openreg").untyped_storage()
            try:
                storage.resize_(-1)
            except RuntimeError as error:
                print(size, storage.nbytes(), error)
            else:
                print(size, storage.nbytes(), "no error")
            del storage
        print(torch.openreg.memory_stats()["active.all.current"])
    """)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for line, size in zip(lines, (0, 16)):
        assert re.fullmatch(rf"{size} {size} .*(negative|out of memory).*", line), line
    assert lines[-1] == "0"  # nothing left allocated
