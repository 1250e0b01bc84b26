"""Build and install the openreg packages into the running Python environment.

Used by tox, scripts/check_wheels.py and scripts/demo.sh. Each package is built against
the torch that is already installed (no build isolation: an isolated build would download
another torch) into a wheel, which is then installed; the next package compiles against
what that wheel really ships. Build directories are kept per environment, so that
switching torch versions never reuses objects compiled for the other one.

A wheel is kept in a cache under its build key (the package's sources, the torch version,
the sanitizer flag and the keys of the builds it compiles against), so an environment
whose key another one already built installs that wheel instead of compiling it again:
with OPENREG_WHEEL_CACHE set (tox.ini shares one cache between its environments) the
cache is shared, otherwise it lives in the environment. A package whose installed build
has the same key is skipped, which makes a second run take seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Dependency order: each package builds against the ones before it.
PACKAGES = ["openreg-runtime", "openreg-torch", "openreg-ops-extra"]
IGNORED_DIRS = {"build", "dist", "tests", "__pycache__", ".pytest_cache"}
# A cached wheel nobody installed for this long is deleted (local caches would grow
# with every source change otherwise).
CACHE_DAYS = 7


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


def builds_against_torch(name: str) -> bool:
    """Whether torch is among the package's build requirements (the runtime's is not, so
    every environment shares one runtime wheel)."""
    with open(ROOT / "packages" / name / "pyproject.toml", "rb") as handle:
        requires = tomllib.load(handle)["build-system"]["requires"]
    return any(requirement.startswith("torch") for requirement in requires)


def build_key(name: str, stamp_dir: Path) -> str:
    """Everything a build of `name` depends on, in the environment of `stamp_dir`."""
    torch = torch_version() if builds_against_torch(name) else "not used"
    return (f"{source_digest(ROOT / 'packages' / name)} torch={torch} "
            f"sanitize={os.environ.get('OPENREG_SANITIZE', '0')} "
            f"deps={installed_dependencies(name, stamp_dir)}")


def build_wheel(name: str, build_dir: Path, wheel_dir: Path) -> Path:
    """`pip wheel` of one package into the empty directory `wheel_dir`."""
    # Keep what was compiled (objects, and the .so files setuptools compares with their
    # sources to skip an unchanged extension) but not the staged Python files and
    # headers: the wheel takes the whole staging tree, so a file deleted from the sources
    # would stay in it.
    for staged in build_dir.glob("lib.*/**/*"):
        if staged.is_file() and staged.suffix != ".so":
            staged.unlink()
    for stale in build_dir.glob("bdist.*"):
        shutil.rmtree(stale)
    # Builds import torch: never autoload the openreg being replaced.
    env = dict(os.environ, OPENREG_BUILD_DIR=str(build_dir), TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    env.setdefault("MAX_JOBS", "2")
    against = f"against torch {torch_version()}" if builds_against_torch(name) else "(no torch)"
    print(f"[install] {name}: building {against}", flush=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                    "--quiet", "--wheel-dir", str(wheel_dir), str(ROOT / "packages" / name)],
                   check=True, env=env)
    (wheel,) = wheel_dir.glob("*.whl")
    return wheel


@contextlib.contextmanager
def locked(path: Path):
    """An exclusive lock on `path`: environments run side by side wait for the one
    building a wheel instead of building it too."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def wheel_cache(stamp_dir: Path) -> Path:
    return Path(os.environ.get("OPENREG_WHEEL_CACHE") or stamp_dir / "wheels")


def prune(cache: Path) -> None:
    cutoff = time.time() - CACHE_DAYS * 86400
    for entry in cache.iterdir():
        if entry.is_dir() and entry.stat().st_mtime < cutoff:
            with locked(entry.with_suffix(".lock")):
                shutil.rmtree(entry, ignore_errors=True)


def wheel_for(name: str, key: str, stamp_dir: Path, force: bool) -> Path:
    """The wheel built under `key`: from the cache, or built now and put there."""
    cache = wheel_cache(stamp_dir)
    entry = cache / f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:20]}"
    with locked(entry.with_suffix(".lock")):
        wheels = list(entry.glob("*.whl"))
        if wheels and not force:
            os.utime(entry)  # in use: not pruned
            print(f"[install] {name}: reusing {wheels[0]}", flush=True)
            return wheels[0]
        partial = entry.with_suffix(".partial")
        shutil.rmtree(partial, ignore_errors=True)
        wheel = build_wheel(name, stamp_dir / name, partial)
        shutil.rmtree(entry, ignore_errors=True)
        partial.rename(entry)
    prune(cache)
    return entry / wheel.name


def install(name: str, force: bool = False, need_wheel: bool = False) -> Path | None:
    """Installs `name` (built, or from the cache) unless its installed build has the same
    key. Returns its wheel; when nothing needed installing, only if `need_wheel`."""
    stamp_dir = Path(sys.prefix) / "openreg-build"
    stamp = stamp_dir / f"{name}.stamp"
    key = build_key(name, stamp_dir)
    up_to_date = not force and stamp.exists() and stamp.read_text() == key
    if up_to_date and not need_wheel:
        print(f"[install] {name}: up to date")
        return None
    wheel = wheel_for(name, key, stamp_dir, force)
    if not up_to_date:
        subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--force-reinstall",
                        "--quiet", str(wheel)], check=True)
        stamp_dir.mkdir(parents=True, exist_ok=True)
        stamp.write_text(key)
    return wheel


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
