"""Build of openreg-torch: libopenreg_torch.so (the backend) and openreg_torch._C (bindings).

Always built against the torch that is installed: `pip install --no-build-isolation`.
The torch version is recorded in the package (openreg_torch/_build_info.py) and in the
wheel's requirements, so an import under another torch fails with a clear message.
"""

import importlib.util
import os
import shutil
from pathlib import Path

# A previously installed (possibly broken or other-torch) openreg-torch must not be
# autoloaded by the `import torch` below: this build is what replaces it.
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"

import torch  # noqa: E402
from setuptools import setup  # noqa: E402
from setuptools.command.build_py import build_py  # noqa: E402
from torch.utils.cpp_extension import BuildExtension, CppExtension  # noqa: E402


def installed_paths(package):
    """`package._paths` (get_include, get_library_dir) without importing `package`: its
    libraries need not load to be built against, and a sanitized build's cannot load in a
    process that has no sanitizer runtime preloaded (OPENREG_SANITIZE=1 below)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"{package} is not installed: build and install it first")
    location = Path(next(iter(spec.submodule_search_locations))) / "_paths.py"
    paths_spec = importlib.util.spec_from_file_location(f"{package}._paths", location)
    module = importlib.util.module_from_spec(paths_spec)
    paths_spec.loader.exec_module(module)
    return module


HERE = Path(__file__).resolve().parent
CSRC = HERE / "csrc"
PACKAGE = "openreg_torch"
LIBRARY = "openreg_torch.lib.libopenreg_torch"
TORCH_VERSION = torch.__version__
TORCH_RELEASE = TORCH_VERSION.split("+")[0]

# -fno-semantic-interposition and -fno-plt: calls to the library's own exported functions
# (the execution layer, streams, the allocator) bind directly and may be inlined, and
# calls into other libraries skip the PLT stub. Nothing interposes openreg's symbols.
# Measured with callgrind (a*b+a on one element): 26,428 -> 26,035 instructions per iteration.
# -O3 rather than -O2: 24,562 -> 24,436 (-Os: more instructions, and slower; see
# benchmarks/README.md).
COMPILE_ARGS = ["-O3", "-g0", "-fvisibility=hidden", "-fno-semantic-interposition", "-fno-plt",
                "-Wall", "-Wno-unused-parameter"]
LINK_ARGS = []
BINDING_MACROS = []

# OPENREG_SANITIZE=1 (the py311-sanitize tox env) builds both libraries with AddressSanitizer
# and UBSan, as openreg-runtime's setup.py does and for the same reasons: UBSan findings
# abort, -Og keeps reports readable, -fno-wrapv undoes Python's -fwrapv (which would hide
# signed overflow). -Og rather than -O1: it compiles these sources 13-22% faster
# (DirectKernels 44 -> 34 s, Minimal 23 -> 20 s, measured back to back; -O0 is no faster and
# its objects are twice the size), and the sanitizer env's build is on the CI's longest path.
# -g1 (line tables, no variables) rather than -g: reports still name file and line, and these
# template-heavy sources compile a third faster with objects a third the size. Later flags
# win over torch's defaults. libtorch itself stays uninstrumented: only openreg's own code is
# checked (the runtime's tests/run_sanitized.py sets the options).
SANITIZE = os.environ.get("OPENREG_SANITIZE", "0") not in ("", "0")
if SANITIZE:
    SANITIZERS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
    COMPILE_ARGS += ["-Og", "-g1", "-fno-omit-frame-pointer", "-fno-wrapv", *SANITIZERS]
    LINK_ARGS += SANITIZERS
    # Compiles the deliberate bugs tests/test_sanitizers.py triggers (SanitizerSelfTest.cpp).
    BINDING_MACROS += [("OPENREG_TORCH_SANITIZER_SELFTEST", "1")]


def sources(*folders):
    return sorted(str(p.relative_to(HERE)) for f in folders for p in (CSRC / f).rglob("*.cpp"))


class BuildLibraries(BuildExtension):
    """Names the backend library libopenreg_torch.so and links the bindings against it."""

    def get_ext_filename(self, ext_name):
        # Called with the dotted name by setuptools and with only the last component by
        # distutils' get_ext_fullpath: both must drop the Python ABI suffix.
        if ext_name == LIBRARY:
            return os.path.join(PACKAGE, "lib", "libopenreg_torch.so")
        if ext_name == LIBRARY.rpartition(".")[2]:
            return "libopenreg_torch.so"
        return super().get_ext_filename(ext_name)

    def get_export_symbols(self, ext):
        # A plain library has no PyInit_ symbol to export.
        return [] if ext.name == LIBRARY else super().get_export_symbols(ext)

    def build_extensions(self):
        # The library first: the bindings link against it.
        self.extensions.sort(key=lambda ext: ext.name != LIBRARY)
        library_dir = os.path.dirname(self.get_ext_fullpath(LIBRARY))
        for ext in self.extensions:
            if ext.name != LIBRARY:
                ext.library_dirs.append(library_dir)
        super().build_extensions()


class BuildPy(build_py):
    """Ships the C++ headers (for openreg-ops-extra) and records the torch version."""

    def run(self):
        super().run()
        target = Path(self.build_lib) / PACKAGE
        include = target / "include" / "openreg_torch"
        for header in CSRC.rglob("*.h"):
            destination = include / header.relative_to(CSRC)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(header, destination)
        (target / "_build_info.py").write_text(
            "# Written at build time: the torch this build of openreg-torch is for.\n"
            f"TORCH_VERSION = {TORCH_VERSION!r}\n"
        )


openreg_runtime = installed_paths("openreg_runtime")
runtime_include = openreg_runtime.get_include()
runtime_lib = openreg_runtime.get_library_dir()

# openreg's Kineto activity profiler (csrc/profiler) needs the wheel's Kineto headers and
# PyTorch's PrivateUse1 profiler registry; without them only the legacy stubs are built.
TORCH_INCLUDE = Path(torch.__file__).resolve().parent / "include"
KINETO_INCLUDE = TORCH_INCLUDE / "kineto"
HAS_KINETO = (
    torch.autograd.kineto_available()
    and (KINETO_INCLUDE / "IActivityProfiler.h").exists()
    and (TORCH_INCLUDE / "torch/csrc/profiler/standalone/privateuse1_profiler.h").exists()
)

backend = CppExtension(
    name=LIBRARY,
    sources=sources("runtime", "execution", "aten", "inductor", "distributed", "profiler"),
    include_dirs=[str(CSRC), runtime_include] + ([str(KINETO_INCLUDE)] if HAS_KINETO else []),
    library_dirs=[runtime_lib],
    libraries=["openreg"],
    define_macros=[("OPENREG_TORCH_BUILDING_LIBRARY", "1")]
    + ([("USE_KINETO", "1")] if HAS_KINETO else []),
    extra_compile_args=COMPILE_ARGS,
    extra_link_args=["-Wl,-rpath,$ORIGIN/../../openreg_runtime/lib",
                     "-Wl,-soname,libopenreg_torch.so", *LINK_ARGS],
)

bindings = CppExtension(
    name=f"{PACKAGE}._C",
    sources=sources("python"),
    include_dirs=[str(CSRC), runtime_include],
    library_dirs=[runtime_lib],
    libraries=["openreg_torch", "openreg"],
    define_macros=BINDING_MACROS,
    extra_compile_args=COMPILE_ARGS,
    extra_link_args=["-Wl,-rpath,$ORIGIN/lib", "-Wl,-rpath,$ORIGIN/../openreg_runtime/lib",
                     *LINK_ARGS],
)

build_dir = os.environ.get("OPENREG_BUILD_DIR")
if SANITIZE:
    # Up-to-date objects are reused whatever flags built them: sanitized and normal builds
    # must never share a directory.
    build_dir = (build_dir or "build") + "-sanitize"
setup(
    ext_modules=[backend, bindings],
    cmdclass={"build_ext": BuildLibraries.with_options(use_ninja=True), "build_py": BuildPy},
    install_requires=[f"torch=={TORCH_RELEASE}", "openreg-runtime>=0.1,<0.2"],
    options={"build": {"build_base": build_dir}} if build_dir else {},
)
