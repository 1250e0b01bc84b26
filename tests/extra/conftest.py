"""Which state these tests expect: openreg-ops-extra installed or not.

tox says so explicitly (OPENREG_EXPECT_EXTRA=1 in the default environments, 0 in the
`noextra` one, which installs only openreg-runtime and openreg-torch), so a wrong
environment fails instead of silently testing the other state. Without the variable
(e.g. a dev venv), the expectation is whatever the package metadata says is installed.
"""

import importlib.metadata
import os

import pytest


def _installed() -> bool:
    try:
        importlib.metadata.distribution("openreg-ops-extra")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.fixture(scope="session")
def expect_extra() -> bool:
    declared = os.environ.get("OPENREG_EXPECT_EXTRA")
    if declared is None:
        return _installed()
    if declared not in ("0", "1"):
        raise pytest.UsageError(f"OPENREG_EXPECT_EXTRA must be 0 or 1, got {declared!r}")
    return declared == "1"
