"""Tests of the real wheels and of clean installs of them.

They need what scripts/check_wheels.py builds (wheels, a venv with the torch they were
built for, a venv with another torch), named by OPENREG_WHEEL_CHECK. Only the tox env
py311-torch213-wheel sets it; everywhere else each test module skips itself (one line
per module in the summary).
"""

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def manifest() -> dict:
    return json.loads(Path(os.environ["OPENREG_WHEEL_CHECK"]).read_text())


# Put in front of every probe script.
PROBE_PRELUDE = """
import json, sys


def mapped_openreg_libraries():
    # The shared libraries actually loaded, wherever the loader found them.
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if len(line.split()) >= 6}
    return sorted(p for p in paths if "openreg" in p.rsplit("/", 1)[-1])
"""


@pytest.fixture(scope="session")
def run_in(manifest, tmp_path_factory):
    """Run a script with a venv's interpreter, isolated from the checkout: -I keeps the
    script's directory, the working directory and PYTHON* variables off sys.path, and
    the working directory is a temporary one."""

    def run(venv: str, code: str, autoload: bool = True) -> subprocess.CompletedProcess:
        tmp_path = tmp_path_factory.mktemp("probe")
        script = tmp_path / "probe.py"
        script.write_text(PROBE_PRELUDE + textwrap.dedent(code))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "1" if autoload else "0"
        return subprocess.run([manifest["venvs"][venv]["python"], "-I", str(script)],
                              cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)

    return run


@pytest.fixture(scope="session")
def probe(run_in):
    """Like run_in, for a script that succeeds and prints one JSON line last."""

    def run(venv: str, code: str, autoload: bool = True) -> dict:
        result = run_in(venv, code, autoload)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.splitlines()[-1])

    return run
