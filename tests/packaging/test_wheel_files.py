"""What the wheels contain and declare, read from the wheel files themselves."""

import configparser
import email.parser
import os
import subprocess
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

if not os.environ.get("OPENREG_WHEEL_CHECK"):
    pytest.skip("needs scripts/check_wheels.py's wheels and venvs (tox -e py311-torch213-wheel)",
                allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["openreg-runtime", "openreg-torch", "openreg-ops-extra"]
# Each package's siblings, by the compatible range it must require (never ==).
SIBLING_RANGES = {
    "openreg-runtime": {},
    "openreg-torch": {"openreg-runtime": ">=0.1,<0.2"},
    "openreg-ops-extra": {"openreg-torch": ">=0.1,<0.2"},
}
EXT = sysconfig.get_config_var("EXT_SUFFIX")


def pyproject(name: str) -> dict:
    return tomllib.loads((ROOT / "packages" / name / "pyproject.toml").read_text())


def module(name: str) -> str:
    return name.replace("-", "_")


def dist_info(wheel: zipfile.ZipFile, name: str) -> str:
    (path,) = [n for n in wheel.namelist()
               if n.count("/") == 1 and n.endswith(f".dist-info/{name}")]
    return wheel.read(path).decode()


def expected_files(name: str) -> set[str]:
    """The Python sources, plus what each build adds: binaries, shipped headers, and
    _build_info.py (the torch a build is for) for the two torch extensions."""
    package = module(name)
    source = ROOT / "packages" / name / "src"
    files = {str(p.relative_to(source)) for p in (source / package).rglob("*.py")
             if "__pycache__" not in p.parts}
    files.add(f"{package}/_C{EXT}")
    if name == "openreg-runtime":
        files |= {f"{package}/lib/libopenreg.so", f"{package}/include/openreg/openreg.h"}
    else:
        files.add(f"{package}/_build_info.py")
    if name == "openreg-torch":
        csrc = ROOT / "packages" / name / "csrc"
        files.add(f"{package}/lib/libopenreg_torch.so")
        files |= {f"{package}/include/openreg_torch/{header.relative_to(csrc)}"
                  for header in csrc.rglob("*.h")}
    return files


@pytest.fixture(params=PACKAGES)
def wheel(request, manifest):
    with zipfile.ZipFile(manifest["wheels"][request.param]) as opened:
        yield request.param, opened


def test_wheel_holds_exactly_the_package(wheel):
    # No build junk (objects, sources, tests, caches, egg-info), nothing missing.
    name, opened = wheel
    files = {n for n in opened.namelist() if not n.split("/", 1)[0].endswith(".dist-info")}
    assert files == expected_files(name)


def test_wheel_tags_name_this_interpreter_and_platform(wheel):
    name, opened = wheel
    fields = email.parser.Parser().parsestr(dist_info(opened, "WHEEL"))
    # Compiled: platform-specific, installed into platlib.
    assert fields["Root-Is-Purelib"] == "false"
    python = f"cp{sysconfig.get_config_var('py_version_nodot')}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    assert fields.get_all("Tag") == [f"{python}-{python}-{platform}"]
    assert Path(opened.filename).name.endswith(f"-{python}-{python}-{platform}.whl")


def test_wheel_metadata_is_what_the_package_declares(wheel, manifest):
    name, opened = wheel
    declared = pyproject(name)["project"]
    metadata = email.parser.Parser().parsestr(dist_info(opened, "METADATA"))
    assert metadata["Name"] == name
    assert metadata["Version"] == declared["version"]
    assert metadata["Requires-Python"] == declared["requires-python"]

    requires = [Requirement(r) for r in metadata.get_all("Requires-Dist") or []]
    runtime = {r.name: str(r.specifier) for r in requires if r.marker is None}
    expected = {sibling: str(Requirement(f"{sibling}{spec}").specifier)
                for sibling, spec in SIBLING_RANGES[name].items()}
    if name != "openreg-runtime":
        # The torch extensions are tied to the torch they were compiled against.
        release = manifest["built_for_torch"].split("+")[0]
        expected["torch"] = f"=={release}"
    assert runtime == expected
    # Optional dependencies (the runtime's `test` extra) stay behind their extra.
    optional = {(r.name, str(r.marker)) for r in requires if r.marker is not None}
    assert optional == {(Requirement(p).name, f'extra == "{extra}"')
                        for extra, packages in declared.get("optional-dependencies", {}).items()
                        for p in packages}


def test_sibling_ranges_admit_the_siblings_and_match_the_build_requirements():
    for name, siblings in SIBLING_RANGES.items():
        build_requires = {Requirement(r).name: Requirement(r).specifier
                          for r in pyproject(name)["build-system"]["requires"]}
        for sibling, spec in siblings.items():
            range_ = Requirement(f"{sibling}{spec}").specifier
            assert Version(pyproject(sibling)["project"]["version"]) in range_
            assert build_requires[sibling] == range_


def test_entry_points_are_the_declared_ones(wheel):
    name, opened = wheel
    declared = dict(pyproject(name)["project"].get("entry-points", {}))
    if "scripts" in pyproject(name)["project"]:  # console scripts (openreg-smi)
        declared["console_scripts"] = pyproject(name)["project"]["scripts"]
    parser = configparser.ConfigParser(delimiters=("=",))
    parser.optionxform = str
    try:
        parser.read_string(dist_info(opened, "entry_points.txt"))
    except ValueError:  # no entry_points.txt
        pass
    shipped = {group: dict(parser[group]) for group in parser.sections()}
    assert shipped == declared


@pytest.mark.parametrize("name", ["openreg-torch", "openreg-ops-extra"])
def test_build_info_records_the_torch_built_against(name, manifest):
    with zipfile.ZipFile(manifest["wheels"][name]) as opened:
        text = opened.read(f"{module(name)}/_build_info.py").decode()
    namespace = {}
    exec(text, namespace)
    assert namespace["TORCH_VERSION"] == manifest["built_for_torch"]


def test_shared_libraries_find_their_siblings_relative_to_themselves(wheel, tmp_path):
    # An absolute RUNPATH (the build tree, the build env's site-packages) would work on
    # the build machine only, or silently load another install's library.
    name, opened = wheel
    for member in opened.namelist():
        if not member.endswith(".so"):
            continue
        library = Path(opened.extract(member, tmp_path))
        dynamic = subprocess.run(["readelf", "-d", str(library)], check=True,
                                 capture_output=True, text=True).stdout
        paths = [entry for line in dynamic.splitlines() if "(RUNPATH)" in line or "(RPATH)" in line
                 for entry in line.split("[", 1)[1].rstrip("]").split(":")]
        assert all(p.startswith("$ORIGIN") for p in paths), (member, paths)
