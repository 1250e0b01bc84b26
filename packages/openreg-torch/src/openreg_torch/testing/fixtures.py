"""pytest fixtures over openreg_torch.testing. A conftest.py imports the ones it wants:

    from openreg_torch.testing.fixtures import restore_device_and_streams, run_python  # noqa: F401

``restore_device_and_streams`` is autouse: every test of that directory gets it.
"""

from __future__ import annotations

import pytest

from ._process import run_python as _run_python
from ._state import preserved_device_and_streams

__all__ = ["restore_device_and_streams", "run_python"]


@pytest.fixture(autouse=True)
def restore_device_and_streams():
    """Each test ends with the current device and streams it started with."""
    with preserved_device_and_streams():
        yield


@pytest.fixture
def run_python():
    """openreg_torch.testing.run_python, for tests that take it as a fixture."""
    return _run_python
