"""Packaging: version, entry point, link layout, the torch-version guard, load order."""

import importlib.metadata
import shutil
import textwrap
from pathlib import Path

import pytest

import openreg_ops_extra
from openreg_torch.testing import run_process


def test_version_and_dependencies():
    assert openreg_ops_extra.__version__ == importlib.metadata.version("openreg-ops-extra")
    requirements = importlib.metadata.requires("openreg-ops-extra")
    assert "openreg-torch<0.2,>=0.1" in requirements
    assert any(r.startswith("torch==") for r in requirements), requirements


def test_torch_backends_entry_point():
    entry_points = importlib.metadata.entry_points(group="torch.backends")
    ours = [ep for ep in entry_points if ep.dist.name == "openreg-ops-extra"]
    assert [(ep.name, ep.value) for ep in ours] == [("openreg_extra", "openreg_ops_extra:_autoload")]


@pytest.mark.skipif(shutil.which("readelf") is None, reason="needs binutils' readelf")
def test_extension_links_its_siblings_through_relative_rpaths():
    extension = Path(openreg_ops_extra._C.__file__)
    readelf = run_process(["readelf", "-d", extension], timeout=60)
    assert readelf.returncode == 0, readelf.stderr
    dynamic = readelf.stdout
    # Its kernels launch through openreg-torch's execution layer: only that library is
    # linked (libopenreg.so comes along with it).
    assert "[libopenreg_torch.so]" in dynamic and "[libopenreg.so]" not in dynamic
    runpath = next(line for line in dynamic.splitlines() if "RUNPATH" in line or "RPATH" in line)
    assert "$ORIGIN/../openreg_torch/lib" in runpath


def test_refuses_another_torch_with_a_clear_message(run_python):
    result = run_python(
        """
        import sys, types
        build_info = types.ModuleType("openreg_ops_extra._build_info")
        build_info.TORCH_VERSION = "2.0.0+other"
        sys.modules["openreg_ops_extra._build_info"] = build_info
        import torch
        """
    )
    assert result.returncode != 0
    assert "Failed to load the backend extension: openreg_extra" in result.stderr
    assert "openreg-ops-extra was built for torch 2.0.0+other but torch 2." in result.stderr
    assert "--no-build-isolation --force-reinstall" in result.stderr
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in result.stderr
    assert "Segmentation" not in result.stderr


def test_guard_runs_before_anything_is_loaded(run_python):
    result = run_python(
        """
        import sys, types, torch
        build_info = types.ModuleType("openreg_ops_extra._build_info")
        build_info.TORCH_VERSION = "1.0"
        sys.modules["openreg_ops_extra._build_info"] = build_info
        try:
            import openreg_ops_extra
        except ImportError as error:
            print("refused:", error)
        print("extension loaded:", "openreg_ops_extra._C" in sys.modules)
        print("backend loaded:", "openreg_torch" in sys.modules)
        """,
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
    )
    assert result.returncode == 0, result.stderr
    assert "refused: openreg-ops-extra was built for torch 1.0" in result.stdout
    assert "extension loaded: False" in result.stdout
    assert "backend loaded: False" in result.stdout


LOAD_CHECK = """
import torch
x = torch.tensor([-1.0, 2.0]).to("openreg")
assert torch.ops.openreg.custom_abs(x).cpu().tolist() == [1.0, 2.0]
import openreg_ops_extra
before = openreg_ops_extra._C._abs_stub_calls()
assert torch.abs(x).cpu().tolist() == [1.0, 2.0]
assert openreg_ops_extra._C._abs_stub_calls() == before + 1
print("ok", x.device)
"""


@pytest.mark.parametrize("imports", [
    "import torch, openreg_ops_extra",                 # ops-extra first: it loads the backend
    "import torch, openreg_torch, openreg_ops_extra",  # backend first
    "import openreg_ops_extra",                        # without importing torch at all
], ids=["extra-first", "backend-first", "extra-alone"])
def test_explicit_import_in_any_order(run_python, imports):
    result = run_python(imports + "\n" + LOAD_CHECK, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok openreg:0"


@pytest.mark.parametrize("order", ["forward", "reversed"])
def test_entry_points_in_either_order(run_python, order):
    # What torch's autoload does, with the entry points taken in both orders.
    result = run_python(
        textwrap.dedent(f"""
        import importlib.metadata, torch
        entry_points = [ep for ep in importlib.metadata.entry_points(group="torch.backends")
                        if ep.name in ("openreg", "openreg_extra")]
        assert len(entry_points) == 2, entry_points
        entry_points.sort(key=lambda ep: ep.name, reverse={order == "reversed"})
        for entry_point in entry_points:
            entry_point.load()()
        """) + LOAD_CHECK,
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok openreg:0"
