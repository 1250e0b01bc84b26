"""Fixtures of the runtime tests; plain helpers live in runtime_helpers.py."""

import faulthandler

import hypothesis_profiles  # noqa: F401  (also when the runtime's tests run alone)
import pytest

import openreg_runtime as rt

@pytest.fixture(autouse=True)
def _hang_guard():
    # A broken ordering invariant shows up as a wait that never ends; turn
    # it into a failure with every thread's traceback instead of a stuck CI.
    faulthandler.dump_traceback_later(300, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture(autouse=True)
def _reset_current_device():
    yield
    rt.set_device(0)


@pytest.fixture
def device_buffer():
    """Allocate device memory that is freed after the test."""
    allocated = []

    def make(size: int, device: int = 0) -> int:
        previous = rt.current_device()
        rt.set_device(device)
        try:
            ptr = rt.malloc(size)
        finally:
            rt.set_device(previous)
        allocated.append(ptr)
        return ptr

    yield make
    for ptr in allocated:
        try:
            rt.free(ptr)
        except rt.OpenRegError:
            pass  # the test freed it itself


@pytest.fixture(autouse=True, scope="session")
def _fault_diagnostics_under_pytest():
    # pytest enables faulthandler after plugins load, replacing the handler
    # the runtime installed; put ours back on top (it chains to faulthandler).
    rt.install_fault_handler()
