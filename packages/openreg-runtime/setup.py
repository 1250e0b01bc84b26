"""Build libopenreg.so (a plain shared library, not a Python module) and the
pybind11 extension openreg_runtime._C that links it through $ORIGIN/lib.

Both are setuptools extensions so pip builds them into the wheel; a small
build_ext subclass gives the library its real name and location and builds
it first. Unchanged sources are not recompiled on re-runs.

OPENREG_SANITIZE=1 builds both with AddressSanitizer and UBSan instead, in a
separate build directory (see the py311-sanitize tox env).
"""

import os
from pathlib import Path

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).parent.resolve()
CSRC = HERE / "csrc"
INCLUDE = HERE / "src" / "openreg_runtime" / "include"
LIBRARY = "openreg_runtime.lib.libopenreg"

# At most 2 parallel compile jobs (override with NPY_NUM_BUILD_JOBS).
ParallelCompile("NPY_NUM_BUILD_JOBS", default=2).install()

FLAGS = ["-std=c++17", "-O2", "-g0", "-Wall", "-Wextra"]
LINK_FLAGS = []
MACROS = []

# OPENREG_SANITIZE=1 (the py311-sanitize tox env) builds both libraries with
# AddressSanitizer and UBSan; UBSan findings abort instead of warning and
# going on. -Og -g keep reports readable (line numbers, few inlined frames);
# -Og rather than -O1 because it compiles faster (see openreg-torch's setup.py).
# Python's own CFLAGS carry -fwrapv, which makes signed overflow defined and
# so invisible to UBSan: undo it here. Later flags win over earlier ones.
SANITIZE = os.environ.get("OPENREG_SANITIZE", "0") not in ("", "0")
if SANITIZE:
    sanitizers = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
    FLAGS += ["-Og", "-g", "-fno-omit-frame-pointer", "-fno-wrapv", *sanitizers]
    LINK_FLAGS += sanitizers
    # Compiles the deliberate bugs the sanitizer tests trigger (SanitizerSelfTest.cpp).
    MACROS += [("OPENREG_SANITIZER_SELFTEST", "1")]


def rel(paths):
    # setuptools wants source paths relative to setup.py.
    return sorted(os.path.relpath(p, HERE) for p in paths)


# setup.py too: setuptools rebuilds an extension only when one of these is
# newer than it, and an edit to the flags here must count as a change.
DEPENDS = rel([*CSRC.glob("*.h"), *CSRC.glob("python/*.h"), INCLUDE / "openreg/openreg.h",
               HERE / "setup.py"])

library = Extension(
    LIBRARY,
    sources=rel(CSRC.glob("*.cpp")),
    include_dirs=[str(INCLUDE)],
    define_macros=[("OPENREG_BUILDING_LIBRARY", "1")],
    # Calls between the library's own exported functions bind directly (no PLT, and
    # inlinable): nothing interposes them, and the launch path crosses several.
    extra_compile_args=[*FLAGS, "-fvisibility=hidden", "-fvisibility-inlines-hidden",
                        "-fno-semantic-interposition", "-fno-plt"],
    extra_link_args=[
        "-Wl,-soname,libopenreg.so",
        f"-Wl,--version-script={CSRC / 'libopenreg.map'}",
        "-pthread",
        *LINK_FLAGS,
    ],
    depends=DEPENDS + rel([CSRC / "libopenreg.map"]),
    language="c++",
)

bindings = Pybind11Extension(
    "openreg_runtime._C",
    sources=rel(CSRC.glob("python/*.cpp")),
    include_dirs=[str(INCLUDE)],
    libraries=["openreg"],
    define_macros=MACROS,
    extra_compile_args=FLAGS,
    extra_link_args=["-Wl,-rpath,$ORIGIN/lib", *LINK_FLAGS],
    depends=DEPENDS,
    cxx_std=17,
)


class BuildExt(build_ext):
    """Builds libopenreg.so as openreg_runtime/lib/libopenreg.so, then _C."""

    def get_ext_filename(self, fullname):
        # Called with the dotted name by setuptools and with only the last
        # component by distutils' get_ext_fullpath; drop the ABI suffix.
        if fullname == LIBRARY:
            return os.path.join("openreg_runtime", "lib", "libopenreg.so")
        if fullname == LIBRARY.rpartition(".")[2]:
            return "libopenreg.so"
        return super().get_ext_filename(fullname)

    def build_extensions(self):
        # The library first: _C links against it.
        self.extensions.sort(key=lambda ext: ext.name != LIBRARY)
        super().build_extensions()

    def build_extension(self, ext):
        if ext.name != LIBRARY:
            ext.library_dirs = [os.path.dirname(self.get_ext_fullpath(LIBRARY))]
        super().build_extension(ext)

    def get_export_symbols(self, ext):
        # A plain library has no PyInit_ symbol to export.
        return [] if ext.name == LIBRARY else super().get_export_symbols(ext)


# scripts/install_packages.py keeps one build directory per environment.
build_dir = os.environ.get("OPENREG_BUILD_DIR")
if SANITIZE:
    # Up-to-date outputs are reused whatever flags built them: sanitized and
    # normal builds must never share a directory.
    build_dir = (build_dir or "build") + "-sanitize"
setup(
    ext_modules=[library, bindings],
    cmdclass={"build_ext": BuildExt},
    options={"build": {"build_base": build_dir}} if build_dir else {},
)
