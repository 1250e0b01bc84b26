"""Fixtures of openreg-ops-extra's tests. `run_python` and the autouse restore of the
current device and streams come from the shared test support (openreg_torch.testing)."""

import pytest

import openreg_ops_extra
from openreg_torch.testing.fixtures import restore_device_and_streams, run_python  # noqa: F401


@pytest.fixture
def stub_calls():
    """How many times the openreg abs_stub kernel ran since the test started."""
    start = openreg_ops_extra._C._abs_stub_calls()
    return lambda: openreg_ops_extra._C._abs_stub_calls() - start
