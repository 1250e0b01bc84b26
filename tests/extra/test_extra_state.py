"""openreg-ops-extra is opt-in: installed, a plain `import torch` makes its operators
active; not installed, nothing of it exists and torch.abs on openreg still works
(through openreg-torch's fallback). Each test asserts the state this environment is
meant to be in (see conftest.py); run under tox in both states."""

import json

import pytest

from openreg_torch.testing import run_python

PROBE = """
import importlib.metadata, importlib.util, json, sys
import torch  # plain import: autoload only

table = torch._C._dispatch_dump_table("aten::abs.out")
abs_out = next(l for l in table.splitlines() if l.startswith("PrivateUse1:"))
state = {
    "module_loaded": "openreg_ops_extra" in sys.modules,
    "module_findable": importlib.util.find_spec("openreg_ops_extra") is not None,
    "entry_points": sorted(ep.name for ep in importlib.metadata.entry_points(group="torch.backends")),
    "custom_abs": hasattr(torch.ops.openreg, "custom_abs"),
    "custom_square": hasattr(torch.ops.openreg, "custom_square"),
    "abs_out_kernel": abs_out.rsplit("[", 1)[1].rstrip("]"),
    "abs_out_source": abs_out,
    "openreg_namespace": hasattr(torch.ops, "openreg"),
    "device": str(torch.ones(1, device="openreg").device),
}
print(json.dumps(state))
"""


@pytest.fixture(scope="module")
def state():
    # TORCH_DEVICE_BACKEND_AUTOLOAD unset, as in a user's shell.
    result = run_python(PROBE, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": None})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_backend_is_there_either_way(state):
    assert state["device"] == "openreg:0"
    assert "openreg" in state["entry_points"]


def test_package_presence(state, expect_extra):
    assert state["module_findable"] is expect_extra
    assert state["module_loaded"] is expect_extra  # loaded by `import torch` alone
    assert ("openreg_extra" in state["entry_points"]) is expect_extra


def test_custom_operators(state, expect_extra):
    assert state["custom_abs"] is expect_extra
    assert state["custom_square"] is expect_extra


def test_abs_route(state, expect_extra):
    if expect_extra:
        assert state["abs_out_kernel"] == "kernel"
        assert "openreg-ops-extra" in state["abs_out_source"]
    else:
        assert state["abs_out_kernel"] == "backend fallback"
        assert "openreg-torch" in state["abs_out_source"]


def test_abs_results_match_cpu():
    result = run_python(
        """
        import torch
        for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16,
                      torch.int8, torch.int64, torch.uint8, torch.complex64):
            cpu = (torch.randn(5, 6) * 50).to(dtype) if not dtype.is_complex \\
                else torch.randn(5, 6, dtype=dtype)
            device = cpu.to("openreg")
            torch.testing.assert_close(torch.abs(device).cpu(), torch.abs(cpu))
            torch.testing.assert_close(torch.abs(device.t()).cpu(), torch.abs(cpu.t()))
            out = torch.empty(0, dtype=dtype.to_real(), device="openreg")
            torch.testing.assert_close(torch.abs(device, out=out).cpu(), torch.abs(cpu))
            if not dtype.is_complex:
                torch.testing.assert_close(device.abs_().cpu(), cpu.abs_())
        assert torch.abs(torch.empty(0, 3, device="openreg")).shape == (0, 3)
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_custom_abs_use(expect_extra):
    result = run_python(
        """
        import torch
        x = torch.tensor([-1.0, 2.0, -3.0], device="openreg")
        try:
            op = torch.ops.openreg.custom_abs
        except AttributeError as error:
            print("absent:", error)
        else:
            print("present:", op(x).cpu().tolist())
        try:
            import openreg_ops_extra
        except ModuleNotFoundError:
            print("no module")
        """
    )
    assert result.returncode == 0, result.stderr
    if expect_extra:
        assert result.stdout.strip() == "present: [1.0, 2.0, 3.0]"
    else:
        lines = result.stdout.strip().splitlines()
        assert lines[0].startswith("absent:") and "custom_abs" in lines[0]
        assert lines[1] == "no module"
