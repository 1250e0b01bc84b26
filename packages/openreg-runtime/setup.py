"""Build libopenreg.so (a plain shared library, not a Python module) and the
pybind11 extension openreg_runtime._C that links it through $ORIGIN/lib.

Both are setuptools extensions so pip builds them into the wheel; a small
build_ext subclass gives the library its real name and location and builds
it first. Unchanged sources are not recompiled on re-runs.
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


def rel(paths):
    # setuptools wants source paths relative to setup.py.
    return sorted(os.path.relpath(p, HERE) for p in paths)


HEADERS = rel([*CSRC.glob("*.h"), *CSRC.glob("python/*.h"), INCLUDE / "openreg/openreg.h"])

library = Extension(
    LIBRARY,
    sources=rel(CSRC.glob("*.cpp")),
    include_dirs=[str(INCLUDE)],
    define_macros=[("OPENREG_BUILDING_LIBRARY", "1")],
    extra_compile_args=[*FLAGS, "-fvisibility=hidden", "-fvisibility-inlines-hidden"],
    extra_link_args=[
        "-Wl,-soname,libopenreg.so",
        f"-Wl,--version-script={CSRC / 'libopenreg.map'}",
        "-pthread",
    ],
    depends=HEADERS + rel([CSRC / "libopenreg.map"]),
    language="c++",
)

bindings = Pybind11Extension(
    "openreg_runtime._C",
    sources=rel(CSRC.glob("python/*.cpp")),
    include_dirs=[str(INCLUDE)],
    libraries=["openreg"],
    extra_compile_args=FLAGS,
    extra_link_args=["-Wl,-rpath,$ORIGIN/lib"],
    depends=HEADERS,
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
setup(
    ext_modules=[library, bindings],
    cmdclass={"build_ext": BuildExt},
    options={"build": {"build_base": build_dir}} if build_dir else {},
)
