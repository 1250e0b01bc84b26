import os
import subprocess
import sys
import textwrap

import pytest
import torch


@pytest.fixture
def run_python(tmp_path):
    """Run a script in a fresh interpreter (for state before initialisation, or crashes)."""

    def run(code: str, env: dict[str, str] | None = None, timeout: float = 120):
        script = tmp_path / "script.py"
        script.write_text(textwrap.dedent(code))
        return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              env=dict(os.environ, **(env or {})), timeout=timeout)

    return run


@pytest.fixture(autouse=True)
def default_device_and_streams():
    """Each test starts and ends on device 0 with the default streams current."""
    yield
    for index in range(torch.openreg.device_count()):
        torch.openreg.set_stream(torch.openreg.default_stream(index))
    torch.openreg.set_device(0)
