"""Per-device generators: CPU-identical numbers, independence, state save/restore."""

import pytest
import torch

import openreg_torch


def sample_all(device):
    values = [
        torch.rand(100, device=device),
        torch.randn(3, 5, device=device),
        torch.randint(0, 1000, (50,), device=device),
        torch.empty(40, device=device).normal_(2.0, 3.0),
        torch.empty(40, device=device).uniform_(-1, 1),
        torch.bernoulli(torch.full((64,), 0.3, device=device)),
        torch.multinomial(torch.ones(10, device=device), 5),
        torch.randperm(20, device=device),
        torch.nn.functional.dropout(torch.ones(64, device=device), p=0.5),
        # p=0 still draws (an all-ones mask), so the numbers after it stay the CPU's.
        torch.native_dropout(torch.ones(8, device=device), 0.0, True)[0],
        torch.empty(30, device=device).exponential_(2.0),
        torch.empty(30, device=device).cauchy_(),
        torch.empty(30, device=device, dtype=torch.float64).log_normal_(),
        torch.empty(30, device=device).geometric_(0.3),
        torch.empty(30, device=device, dtype=torch.int64).random_(-5, 5),
        torch.empty(30, device=device, dtype=torch.int16).random_(),
        torch.empty(30, device=device).bernoulli_(torch.rand(30, device=device)),
        torch.poisson(torch.rand(30, device=device) * 4),
        torch.normal(torch.zeros(30, device=device), torch.rand(30, device=device)),
        torch.multinomial(torch.rand(3, 8, device=device), 20, replacement=True),
    ]
    return [value.cpu() for value in values]


def test_same_seed_gives_cpu_numbers():
    torch.manual_seed(2024)
    on_device = sample_all("openreg")
    torch.manual_seed(2024)
    on_cpu = sample_all("cpu")
    for device_value, cpu_value in zip(on_device, on_cpu):
        torch.testing.assert_close(device_value, cpu_value, rtol=0, atol=0)


def test_devices_have_independent_generators():
    torch.openreg.manual_seed_all(5)
    first = torch.rand(8, device="openreg:0").cpu()
    # Drawing on device 1 does not advance device 0's generator.
    torch.rand(100, device="openreg:1")
    torch.openreg.manual_seed_all(5)
    torch.rand(100, device="openreg:1")
    torch.testing.assert_close(torch.rand(8, device="openreg:0").cpu(), first)


def test_manual_seed_only_seeds_current_device():
    torch.openreg.manual_seed_all(1)
    with torch.openreg.device(1):
        torch.openreg.manual_seed(99)
        assert torch.openreg.initial_seed() == 99
    assert torch.openreg.initial_seed() == 1


def test_rng_state_round_trip():
    torch.openreg.manual_seed(3)
    state = torch.openreg.get_rng_state()
    assert state.dtype == torch.uint8 and state.device.type == "cpu"
    first = torch.randn(10, device="openreg").cpu()
    torch.openreg.set_rng_state(state)
    torch.testing.assert_close(torch.randn(10, device="openreg").cpu(), first)
    states = torch.openreg.get_rng_state_all()
    assert len(states) == 2
    torch.openreg.set_rng_state_all(states)


def test_generator_offset_is_a_clear_error():
    # No Philox offset (CUDA's): the state is the CPU generator's, saved and restored whole.
    generator = torch.Generator(device="openreg")
    for call in (generator.get_offset, lambda: generator.set_offset(4)):
        with pytest.raises(RuntimeError, match="openreg's generator has no offset.*get_state"):
            call()


def test_fork_rng_restores_device_state():
    torch.manual_seed(0)
    with torch.random.fork_rng(devices=[0], device_type="openreg"):
        torch.rand(5, device="openreg")
    after_fork = torch.rand(5, device="openreg").cpu()
    torch.manual_seed(0)
    torch.testing.assert_close(torch.rand(5, device="openreg").cpu(), after_fork)


def test_explicit_generator_matches_cpu_generator():
    generator = torch.Generator(device="openreg").manual_seed(11)
    on_device = torch.randn(6, device="openreg", generator=generator).cpu()
    torch.testing.assert_close(on_device, torch.randn(6, generator=torch.Generator().manual_seed(11)))


def test_cpu_generator_rejected_for_device_op():
    with pytest.raises(RuntimeError, match="Expected a 'openreg' device type for generator"):
        torch.randn(3, device="openreg", generator=torch.Generator())
    # The same from the direct kernels of random operators, naming the operator.
    with pytest.raises(RuntimeError, match=r"found 'cpu' \(in aten::bernoulli_\)"):
        torch.empty(3, device="openreg").bernoulli_(0.5, generator=torch.Generator())


def test_random_operators_take_direct_kernels():
    for op in ["aten::bernoulli_.float", "aten::normal_", "aten::uniform_", "aten::random_.from",
               "aten::multinomial", "aten::exponential_"]:
        assert openreg_torch.fallback.route_of(op) == "direct kernel", op


def test_seeding_before_init_is_queued(run_python):
    result = run_python(
        """
        import torch
        torch.openreg.manual_seed_all(42)
        assert not torch.openreg.is_initialized()
        value = torch.rand(3, device="openreg").cpu()
        torch.manual_seed(42)
        torch.testing.assert_close(value, torch.rand(3))
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_seeds_before_init_keep_only_what_decides_the_outcome(run_python):
    # Every CPU program's torch.manual_seed seeds openreg too: before initialisation a
    # later reset of a generator replaces the queued ones it makes moot, so the queue
    # stays bounded, and the replay still leaves each device as the last call said.
    result = run_python(
        """
        import torch
        from openreg_torch.openreg import _lazy
        for value in range(10_000):
            torch.manual_seed(value)
        assert len(_lazy._queued_calls) == 1, len(_lazy._queued_calls)
        state = torch.Generator().manual_seed(5).get_state()
        torch.openreg.set_rng_state(state, 1)       # device 1: a state after the seed-all
        torch.openreg.manual_seed(8)                # device 0 (current): a seed
        torch.openreg.manual_seed(9)                # replaces the one before
        assert len(_lazy._queued_calls) == 3, len(_lazy._queued_calls)
        assert not torch.openreg.is_initialized()
        draws = [torch.rand(3, device=f"openreg:{index}").cpu() for index in (0, 1)]
        torch.testing.assert_close(draws[0], torch.rand(3, generator=torch.Generator().manual_seed(9)))
        torch.testing.assert_close(draws[1], torch.rand(3, generator=torch.Generator().manual_seed(5)))
        assert torch.openreg.initial_seed() == 9
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_a_state_queued_before_init_that_fails_names_where_it_was_set(run_python):
    # set_rng_state keeps its call site: a failure at the replay points back to it.
    result = run_python(
        """
        import torch
        from openreg_torch.openreg import _lazy
        def set_state_here():
            torch.openreg.set_rng_state(torch.Generator().get_state(), 0)
        set_state_here()
        queued = _lazy._queued_calls[-1]
        def broken():
            raise ValueError("replayed state rejected")
        queued.run = broken
        try:
            torch.ones(1, device="openreg")
        except RuntimeError as error:
            assert "replayed state rejected" in str(error), error
            assert "set_state_here" in str(error), error
            print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


@pytest.mark.parametrize("call", [
    lambda g: torch.empty(3).uniform_(generator=g),
    lambda g: torch.empty(3).random_(generator=g),
    lambda g: torch.bernoulli(torch.full((3,), 0.5), generator=g),
    lambda g: torch.multinomial(torch.ones(3), 2, generator=g),
    lambda g: torch.randperm(5, generator=g),  # DataLoader(shuffle=True, generator=g)
], ids=["uniform_", "random_", "bernoulli", "multinomial", "randperm"])
def test_an_openreg_generator_for_cpu_work_is_refused_as_cuda_refuses_it(call):
    # The generator's dispatch key sends the call to openreg, which has no openreg tensor to
    # run on: the message is the one CUDA's users see ("... found 'cuda'"), not openreg's own.
    generator = torch.Generator("openreg").manual_seed(0)
    with pytest.raises(RuntimeError,
                       match="Expected a 'cpu' device type for generator but found 'openreg'"):
        call(generator)
