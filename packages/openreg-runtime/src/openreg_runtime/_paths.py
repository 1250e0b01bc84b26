"""Where the C header and libopenreg.so live, for packages that link them."""

from pathlib import Path

__all__ = ["get_include", "get_library_dir"]

_HERE = Path(__file__).resolve().parent


def get_include() -> str:
    """Directory to add to the include path: it holds ``openreg/openreg.h``."""
    include = _HERE / "include"
    if not (include / "openreg" / "openreg.h").is_file():
        raise FileNotFoundError(
            f"openreg-runtime is installed without its C header: {include}/openreg/openreg.h "
            "is missing. Reinstall with `pip install --force-reinstall openreg-runtime`."
        )
    return str(include)


def get_library_dir() -> str:
    """Directory holding ``libopenreg.so``, to link with ``-L<dir> -lopenreg``."""
    lib = _HERE / "lib"
    if not (lib / "libopenreg.so").is_file():
        raise FileNotFoundError(
            f"openreg-runtime is installed without its library: {lib}/libopenreg.so is "
            "missing. Reinstall with `pip install --force-reinstall openreg-runtime`."
        )
    return str(lib)
