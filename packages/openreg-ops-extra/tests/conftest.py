import os
import subprocess
import sys
import textwrap

import pytest
import torch

import openreg_ops_extra


@pytest.fixture
def run_python(tmp_path):
    """Run a Python script in a fresh interpreter (for env-dependent or fatal cases)."""

    def run(code: str, env: dict[str, str] | None = None, timeout: float = 120):
        script = tmp_path / "script.py"
        script.write_text(textwrap.dedent(code))
        full_env = dict(os.environ, **(env or {}))
        return subprocess.run(
            [sys.executable, str(script)],
            capture_output=True, text=True, env=full_env, timeout=timeout,
        )

    return run


@pytest.fixture
def stub_calls():
    """How many times the openreg abs_stub kernel ran since the test started."""
    start = openreg_ops_extra._C._abs_stub_calls()
    return lambda: openreg_ops_extra._C._abs_stub_calls() - start


@pytest.fixture(autouse=True)
def restore_current_device():
    torch.openreg.set_device(0)
    yield
    torch.openreg.set_device(0)
