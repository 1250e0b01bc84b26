"""Build real wheels of the openreg packages and the clean environments that test them.

Run by the tox environment py311-torch213-wheel, whose tests (tests/packaging) then use
what this writes. Editable or in-place installs hide packaging defects (files missing from
a wheel, RPATHs that only resolve inside a build tree, wrong metadata); these do not:

1. scripts/install_packages.py builds each package's wheel (`pip wheel
   --no-build-isolation --no-deps`) against the torch of the running Python, in dependency
   order, or takes it from its wheel cache when another environment built the same key.
   Each wheel is installed into the running Python so the next package compiles against
   the headers and libraries a wheel really ships, as a user's build would. Run this in a
   disposable environment (tox's).
2. A clean venv gets the torch the wheels were built for and the wheels, with the
   dependencies the wheels declare and nothing else (no pip, no build tools, no checkout).
3. A second clean venv gets another supported torch and the same wheels with `--no-deps`:
   the state after `pip install torch==<other>` over a working install, which the
   packages' version guards must refuse with a clear message.
4. manifest.json records the wheels, the two interpreters and the torch versions.

Torch is only ever installed by an exact pin (a torch the resolver picked could be a
multi-gigabyte download of an unsupported version).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

import install_packages

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = install_packages.PACKAGES
SUPPORTED_TORCH = ["2.13.0", "2.14.1"]


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    print("[check_wheels] $", " ".join(command), flush=True)
    return subprocess.run(command, check=True, **kwargs)


def pip(python: Path | None, *args: str, **kwargs) -> subprocess.CompletedProcess:
    """pip for `python`, or for the running Python if None. The running pip drives the
    clean venvs (--python): they need no pip of their own."""
    target = ["--python", str(python)] if python else []
    return run([sys.executable, "-m", "pip", *target, *args], **kwargs)


def build_wheels() -> dict[str, Path]:
    """The wheels, each installed into the running Python before the next is built."""
    wheels = {}
    for name in PACKAGES:
        start = time.monotonic()
        wheels[name] = install_packages.install(name, need_wheel=True)
        print(f"[check_wheels] {wheels[name].name}: {time.monotonic() - start:.0f} s", flush=True)
    return wheels


def freeze(python: Path) -> str:
    return pip(python, "freeze", "--all", capture_output=True, text=True).stdout


def clean_venv(path: Path, torch_pin: str, fresh: bool) -> Path:
    """A venv holding torch==torch_pin and its dependencies only.

    Kept between runs (torch 2.14 with its CUDA libraries is ~5 GB and takes a minute or
    two to install) but reused only while it holds exactly what it held when created.
    """
    python = path / "bin" / "python"
    baseline = path / "openreg-baseline.txt"
    if not fresh and baseline.exists():
        try:
            pip(python, "uninstall", "--yes", "--quiet", *PACKAGES)
            unchanged = freeze(python) == baseline.read_text()
        except subprocess.CalledProcessError:  # e.g. its base interpreter is gone
            unchanged = False
        if unchanged:
            print(f"[check_wheels] reusing {path} (torch=={torch_pin} only)", flush=True)
            return python
    shutil.rmtree(path, ignore_errors=True)
    venv.EnvBuilder(with_pip=False).create(path)
    # --no-compile: byte-compiling torch doubles the install time; imports compile lazily.
    pip(python, "install", "--quiet", "--no-compile", f"torch=={torch_pin}")
    baseline.write_text(freeze(python))
    return python


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work-dir", type=Path, required=True,
                        help="where the clean venvs and manifest.json go (e.g. the tox env dir)")
    parser.add_argument("--other-torch", choices=SUPPORTED_TORCH, required=True,
                        help="the torch to install the wheels under, mismatched")
    parser.add_argument("--fresh", action="store_true", help="recreate the clean venvs")
    args = parser.parse_args()

    built_for = importlib.metadata.version("torch")
    release = built_for.split("+")[0]
    if release not in SUPPORTED_TORCH or args.other_torch == release:
        parser.error(f"building under torch {built_for}: --other-torch must be another of "
                     f"{SUPPORTED_TORCH}")
    work = args.work_dir.resolve()
    timings = {}

    start = time.monotonic()
    wheels = build_wheels()
    timings["build wheels"] = time.monotonic() - start

    start = time.monotonic()
    same = clean_venv(work / f"venv-torch{release}", release, args.fresh)
    # The pin is repeated so that a wheel with a wrong torch requirement fails to resolve
    # instead of pulling another torch.
    pip(same, "install", "--quiet", "--no-compile", f"torch=={release}",
        *map(str, wheels.values()))
    timings[f"venv torch {release}"] = time.monotonic() - start

    start = time.monotonic()
    other = clean_venv(work / f"venv-torch{args.other_torch}", args.other_torch, args.fresh)
    pip(other, "install", "--quiet", "--no-compile", "--no-deps", *map(str, wheels.values()))
    timings[f"venv torch {args.other_torch}"] = time.monotonic() - start

    manifest = {
        "built_for_torch": built_for,
        "wheels": {name: str(path) for name, path in wheels.items()},
        "venvs": {
            "same": {"python": str(same), "torch": release},
            "other": {"python": str(other), "torch": args.other_torch},
        },
    }
    (work / "manifest.json").write_text(json.dumps(manifest, indent=2))
    for step, seconds in timings.items():
        print(f"[check_wheels] {step}: {seconds:.0f} s")
    print(f"[check_wheels] wrote {work / 'manifest.json'}")


if __name__ == "__main__":
    main()
