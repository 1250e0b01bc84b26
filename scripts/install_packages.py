"""Build and install the openreg packages into the running Python environment.

Used by tox and by scripts/demo.sh. Each package is built against the torch that is
already installed (no build isolation: an isolated build would download another torch),
with its build directory kept per environment so that switching torch versions never
reuses objects compiled for the other one. A package whose sources, build inputs, torch
version and installed dependencies (the builds of the packages before it) are unchanged
since its last install is skipped, which makes a second run take seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Dependency order: each package builds against the ones before it.
PACKAGES = ["openreg-runtime", "openreg-torch", "openreg-ops-extra"]
IGNORED_DIRS = {"build", "dist", "tests", "__pycache__", ".pytest_cache"}


def source_digest(package_dir: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(package_dir.rglob("*")):
        relative = path.relative_to(package_dir)
        if any(part in IGNORED_DIRS or part.endswith(".egg-info") for part in relative.parts):
            continue
        if path.is_file() and path.suffix != ".so":
            digest.update(str(relative).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def torch_version() -> str:
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return "none"


def is_buildable(package_dir: Path) -> bool:
    return (package_dir / "pyproject.toml").exists()


def installed_dependencies(name: str, stamp_dir: Path) -> str:
    """A digest of the installed builds `name` compiles against (the packages before it):
    openreg-ops-extra must be rebuilt when openreg-torch's headers or library change."""
    digest = hashlib.sha256()
    for dependency in PACKAGES[: PACKAGES.index(name)]:
        stamp = stamp_dir / f"{dependency}.stamp"
        digest.update(stamp.read_bytes() if stamp.exists() else b"not installed")
    return digest.hexdigest()[:16]


def install(name: str, force: bool) -> None:
    package_dir = ROOT / "packages" / name
    stamp_dir = Path(sys.prefix) / "openreg-build"
    stamp = stamp_dir / f"{name}.stamp"
    key = (f"{source_digest(package_dir)} torch={torch_version()} "
           f"sanitize={os.environ.get('OPENREG_SANITIZE', '0')} "
           f"deps={installed_dependencies(name, stamp_dir)}")
    if not force and stamp.exists() and stamp.read_text() == key:
        print(f"[install] {name}: up to date")
        return
    # Builds import torch: never autoload the openreg being replaced.
    env = dict(os.environ, OPENREG_BUILD_DIR=str(stamp_dir / name), TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    command = [
        sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
        "--force-reinstall", "--quiet", str(package_dir),
    ]
    print(f"[install] {name}: building against torch {torch_version()}", flush=True)
    subprocess.run(command, check=True, env=env)
    stamp_dir.mkdir(parents=True, exist_ok=True)
    stamp.write_text(key)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("packages", nargs="*", default=PACKAGES, help="packages to install")
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    args = parser.parse_args()
    for name in PACKAGES:
        if name in args.packages and is_buildable(ROOT / "packages" / name):
            install(name, args.force)


if __name__ == "__main__":
    main()
