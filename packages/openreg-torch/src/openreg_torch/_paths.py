"""Where the shipped C++ headers and library are, for packages that build against them."""

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def get_include() -> str:
    """The directory holding ``openreg_torch/runtime/*.h`` and ``openreg_torch/aten/...``.

    The headers include each other as ``"runtime/..."``: put both this directory and its
    ``openreg_torch`` subdirectory on the include path (openreg-ops-extra's setup.py does).
    """
    include = _PACKAGE / "include"
    if not (include / "openreg_torch" / "runtime" / "OpenRegFunctions.h").exists():
        raise RuntimeError(
            f"openreg-torch headers are missing from {include}; reinstall openreg-torch "
            "(pip install --no-build-isolation packages/openreg-torch)"
        )
    return str(include)


def get_library_dir() -> str:
    """The directory holding ``libopenreg_torch.so``."""
    library = _PACKAGE / "lib"
    if not (library / "libopenreg_torch.so").exists():
        raise RuntimeError(
            f"libopenreg_torch.so is missing from {library}; reinstall openreg-torch "
            "(pip install --no-build-isolation packages/openreg-torch)"
        )
    return str(library)
