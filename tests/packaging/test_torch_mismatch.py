"""The wheels built for one torch, installed with --no-deps under another (as after
`pip install torch==<other>` over a working install): each package's version guard
refuses with one ImportError naming both torch versions and the fix, before any native
code is loaded, and `import torch` says so too instead of crashing."""

import os
import re

import pytest

if not os.environ.get("OPENREG_WHEEL_CHECK"):
    pytest.skip("needs scripts/check_wheels.py's wheels and venvs (tox -e py311-torch213-wheel)",
                allow_module_level=True)

IMPORT = """
import torch
try:
    import MODULE
except BaseException as error:
    outcome = {"type": type(error).__name__, "message": str(error),
               "chained": error.__cause__ is not None or error.__context__ is not None}
else:
    outcome = {"type": None}
outcome["torch"] = torch.__version__
outcome["libraries"] = mapped_openreg_libraries()
print(json.dumps(outcome))
"""

IMPORT_TORCH = """
try:
    import torch
except BaseException as error:
    chain = []
    while error is not None:
        chain.append([type(error).__name__, str(error)])
        error = error.__cause__
else:
    chain = []
print(json.dumps({"chain": chain, "libraries": mapped_openreg_libraries()}))
"""


def guard_message(manifest, package="openreg-(torch|ops-extra)"):
    built, other = manifest["built_for_torch"], manifest["venvs"]["other"]["torch"]
    return re.compile(rf"{package} was built for torch {re.escape(built)} but torch "
                      rf"{re.escape(other)}\S* is installed")


@pytest.mark.parametrize("module", ["openreg_torch", "openreg_ops_extra"])
def test_import_raises_one_clear_import_error_before_native_code(probe, manifest, module):
    outcome = probe("other", IMPORT.replace("MODULE", module), autoload=False)
    package = module.replace("_", "-")
    assert outcome["torch"].split("+")[0] == manifest["venvs"]["other"]["torch"]
    assert outcome["type"] == "ImportError"
    assert not outcome["chained"]
    message = outcome["message"]
    assert guard_message(manifest, package).search(message), message
    # How to fix it: rebuild against this torch, or go back to the torch it was built for.
    assert f"pip install --no-build-isolation --force-reinstall --no-deps packages/{package}" \
        in message
    assert f"install torch {manifest['built_for_torch']}" in message
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in message
    assert outcome["libraries"] == []  # neither libopenreg*.so nor any _C was loaded


def test_import_torch_reports_the_guard_message_on_stderr(run_in, manifest):
    result = run_in("other", "import torch")
    assert result.returncode == 1
    assert guard_message(manifest).search(result.stderr), result.stderr
    last_line = result.stderr.strip().splitlines()[-1]
    assert re.match(r"RuntimeError: Failed to load the backend extension: openreg(_extra)?\. "
                    r"You can disable extension auto-loading with "
                    r"TORCH_DEVICE_BACKEND_AUTOLOAD=0\.", last_line), last_line
    assert "Segmentation fault" not in result.stderr and "undefined symbol" not in result.stderr


def test_import_torch_chains_the_guard_error(probe, manifest):
    outcome = probe("other", IMPORT_TORCH)
    chain = outcome["chain"]
    assert [kind for kind, _ in chain] == ["RuntimeError", "ImportError"], chain
    assert guard_message(manifest).search(chain[1][1])
    assert outcome["libraries"] == []


def test_torch_without_autoload_still_works(probe, manifest):
    outcome = probe("other", """
        import torch
        print(json.dumps({"torch": torch.__version__, "sum": torch.ones(3).add(1).sum().item(),
                          "modules": sorted(m for m in sys.modules if "openreg" in m),
                          "libraries": mapped_openreg_libraries()}))
    """, autoload=False)
    assert outcome["torch"].split("+")[0] == manifest["venvs"]["other"]["torch"]
    assert outcome["sum"] == 6
    assert outcome["modules"] == [] and outcome["libraries"] == []
