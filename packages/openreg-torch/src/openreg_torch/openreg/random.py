"""Random number generation on openreg devices, mirroring torch.cuda.random.

Each device has a default generator; it wraps a CPU generator, so for the same seed an
openreg device draws exactly the numbers the CPU draws.
"""

from collections.abc import Iterable

import torch

from .. import _C
from ._lazy import ALL_DEVICES, CURRENT_DEVICE, _lazy_call, _lazy_init
from ._utils import _device_index, _named_device_index

__all__ = [
    "get_rng_state",
    "get_rng_state_all",
    "set_rng_state",
    "set_rng_state_all",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "initial_seed",
    "default_generator",
]


def default_generator(device=None) -> torch.Generator:
    """The default generator of `device` (the current device by default)."""
    _lazy_init()
    return _C._get_default_generator(_device_index(device))


def _generator_at_run(index: int | None) -> torch.Generator:
    """The default generator of device `index`, or of the device current when a queued
    call runs (None): finding the current device before initialisation would start the
    runtime, and a child forked after seeding could not use openreg (torch.cuda also
    looks it up inside its queued seeding calls)."""
    return _C._get_default_generator(_C._get_device() if index is None else index)


def get_rng_state(device="openreg") -> torch.Tensor:
    """The RNG state of `device` as a ByteTensor."""
    return default_generator(device).get_state()


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(index) for index in range(_C._get_device_count())]


def set_rng_state(new_state: torch.Tensor, device="openreg") -> None:
    state = new_state.clone(memory_format=torch.contiguous_format)
    # Device generators wrap a CPU one: a throwaway CPU generator rejects a bad state now,
    # with the same message, rather than when a queued call replays at initialisation.
    torch.Generator().set_state(state)
    index = _named_device_index(device)
    _lazy_call(lambda: _generator_at_run(index).set_state(state),
               resets=CURRENT_DEVICE if index is None else index)


def set_rng_state_all(new_states: Iterable[torch.Tensor]) -> None:
    for index, state in enumerate(new_states):
        set_rng_state(state, index)


def _seed_value(seed: int) -> int:
    """`seed` as an int the generators accept, checked now: a queued call that failed at
    initialisation would make the first use of openreg raise instead."""
    try:
        value = int(seed)
    except (TypeError, ValueError) as error:  # same types as torch.cuda.manual_seed raises
        raise type(error)(f"openreg: a seed must be an integer, got {seed!r}") from None
    if not -(2**63) <= value < 2**64:
        raise ValueError(f"openreg: seed {value} is out of range: seeds are integers in "
                         f"[-2**63, 2**64 - 1]")
    return value


# DOC START: manual-seed
def manual_seed(seed: int) -> None:
    """Seed the current device's generator. Queued if openreg is not initialised yet."""
    seed = _seed_value(seed)
    _lazy_call(lambda: _generator_at_run(None).manual_seed(seed), resets=CURRENT_DEVICE,
               keep_origin=False)
# DOC END: manual-seed


def manual_seed_all(seed: int) -> None:
    """Seed every device's generator (torch.manual_seed calls this)."""
    seed = _seed_value(seed)

    def seed_all_devices() -> None:
        for index in range(_C._get_device_count()):
            _C._get_default_generator(index).manual_seed(seed)

    _lazy_call(seed_all_devices, resets=ALL_DEVICES, keep_origin=False)


def seed() -> None:
    """Seed the current device's generator with a non-deterministic random number."""
    _lazy_call(lambda: _generator_at_run(None).seed(), resets=CURRENT_DEVICE,
               keep_origin=False)


def seed_all() -> None:
    """Seed every device with one non-deterministic random number."""

    def seed_all_devices() -> None:
        value = _C._get_default_generator(0).seed()
        for index in range(1, _C._get_device_count()):
            _C._get_default_generator(index).manual_seed(value)

    _lazy_call(seed_all_devices, resets=ALL_DEVICES, keep_origin=False)


def initial_seed() -> int:
    """The current seed of the current device's generator."""
    return default_generator().initial_seed()
