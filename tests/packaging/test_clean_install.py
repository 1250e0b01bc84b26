"""The wheels installed into a clean venv with the torch they were built for: everything
is imported from that venv (never from the checkout) and works after a plain
`import torch`."""

import os
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

if not os.environ.get("OPENREG_WHEEL_CHECK"):
    pytest.skip("needs scripts/check_wheels.py's wheels and venvs (tox -e py311-torch213-wheel)",
                allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]

SMOKE = """
import importlib.metadata as metadata, sysconfig
import torch  # plain import: the torch.backends entry points load openreg

autoloaded = sorted(m for m in ("openreg_torch", "openreg_ops_extra") if m in sys.modules)
import openreg_runtime, openreg_torch, openreg_ops_extra

x = torch.randn(16, 8, generator=torch.Generator().manual_seed(0))
def compute(t):
    return ((t * 2 + 1).relu().sum(dim=1), t.sort(dim=0).values, t.cumsum(dim=1))
on_device = compute(x.to("openreg"))
print(json.dumps({
    "autoloaded": autoloaded,
    "devices": sorted({str(t.device) for t in on_device}),
    "equal_to_cpu": all(torch.equal(d.cpu(), c) for d, c in zip(on_device, compute(x))),
    "custom_abs": torch.equal(torch.ops.openreg.custom_abs(x.to("openreg")).cpu(), x.abs()),
    "torch": torch.__version__,
    "site": sysconfig.get_paths()["platlib"],
    "files": {m: sys.modules[m].__file__ for m in
              ("openreg_runtime", "openreg_torch", "openreg_ops_extra", "torch")},
    "libraries": mapped_openreg_libraries(),
    "include": {"openreg_runtime": openreg_runtime.get_include(),
                "openreg_torch": openreg_torch.get_include()},
    "library_dir": {"openreg_runtime": openreg_runtime.get_library_dir(),
                    "openreg_torch": openreg_torch.get_library_dir()},
    "distributions": {d.metadata["Name"]: {"version": d.version, "requires": d.requires or []}
                      for d in metadata.distributions()},
}))
"""


@pytest.fixture(scope="module")
def smoke(probe):
    # One interpreter start serves every test below.
    return probe("same", SMOKE)


def test_plain_import_torch_autoloads_both_packages(smoke):
    assert smoke["autoloaded"] == ["openreg_ops_extra", "openreg_torch"]


def test_device_results_equal_cpu(smoke):
    assert smoke["devices"] == ["openreg:0"]
    assert smoke["equal_to_cpu"]


def test_custom_op_of_ops_extra_works(smoke):
    assert smoke["custom_abs"]


def test_everything_is_imported_and_loaded_from_the_venv(smoke):
    # An editable install or a stray sys.path entry would import from packages/ instead.
    site = Path(smoke["site"])
    for module, path in smoke["files"].items():
        assert Path(path).is_relative_to(site), (module, path)
    libraries = smoke["libraries"]
    assert {Path(p).name for p in libraries} >= {"libopenreg.so", "libopenreg_torch.so"}
    assert all(Path(p).is_relative_to(site) for p in libraries), libraries


def test_shipped_headers_and_libraries_are_found(smoke):
    include = smoke["include"]
    assert Path(include["openreg_runtime"], "openreg", "openreg.h").is_file()
    assert Path(include["openreg_torch"], "openreg_torch", "runtime",
                "OpenRegFunctions.h").is_file()
    assert Path(smoke["library_dir"]["openreg_runtime"], "libopenreg.so").is_file()
    assert Path(smoke["library_dir"]["openreg_torch"], "libopenreg_torch.so").is_file()
    for paths in (include, smoke["library_dir"]):
        assert all(Path(p).is_relative_to(smoke["site"]) for p in paths.values())


def test_installed_versions_are_the_declared_ones(smoke, manifest):
    distributions = smoke["distributions"]
    for name in ("openreg-runtime", "openreg-torch", "openreg-ops-extra"):
        declared = tomllib.loads((ROOT / "packages" / name / "pyproject.toml").read_text())
        assert distributions[name]["version"] == declared["project"]["version"]
    assert smoke["torch"].split("+")[0] == manifest["venvs"]["same"]["torch"]


def test_venv_holds_only_the_wheels_and_their_dependencies(smoke):
    # Everything installed is reachable from the three packages' requirements: no pip,
    # no build tools, no test tools.
    distributions = {canonicalize_name(n): d for n, d in smoke["distributions"].items()}
    reachable, todo = set(), ["openreg-runtime", "openreg-torch", "openreg-ops-extra"]
    while todo:
        name = canonicalize_name(todo.pop())
        if name in reachable:
            continue
        reachable.add(name)
        for requirement in map(Requirement, distributions[name]["requires"]):
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    assert set(distributions) == reachable
