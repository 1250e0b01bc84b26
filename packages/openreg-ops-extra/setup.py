"""Build of openreg-ops-extra: the extension openreg_ops_extra._C (kernels + registrations).

Always built against the torch and openreg-torch that are installed:
`pip install --no-build-isolation`. It compiles against openreg-torch's shipped headers,
links libopenreg_torch.so (whose execution layer runs its kernels; it brings libopenreg.so
along) and finds it at run time through an RPATH relative to site-packages. The torch version is recorded in the package
(openreg_ops_extra/_build_info.py) and in the wheel's requirements, so an import under
another torch fails with a clear message.
"""

import importlib.util
import os
from pathlib import Path

# An installed (possibly broken or other-torch) openreg backend must not be autoloaded by
# the imports below: this build may be what replaces it.
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
PACKAGE = "openreg_ops_extra"
TORCH_VERSION = torch.__version__
TORCH_RELEASE = TORCH_VERSION.split("+")[0]

COMPILE_ARGS = ["-O2", "-g0", "-fvisibility=hidden", "-fno-semantic-interposition", "-fno-plt",
                "-Wall", "-Wno-unused-parameter"]
LINK_ARGS = []

# OPENREG_SANITIZE=1 (the py311-sanitize tox env): AddressSanitizer and UBSan, the flags and
# reasons of openreg-torch's setup.py.
SANITIZE = os.environ.get("OPENREG_SANITIZE", "0") not in ("", "0")
if SANITIZE:
    SANITIZERS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
    COMPILE_ARGS += ["-Og", "-g1", "-fno-omit-frame-pointer", "-fno-wrapv", *SANITIZERS]
    LINK_ARGS += SANITIZERS


def sources():
    return sorted(str(p.relative_to(HERE)) for p in CSRC.rglob("*.cpp"))


class BuildPy(build_py):
    """Records the torch version this build is for."""

    def run(self):
        super().run()
        target = Path(self.build_lib) / PACKAGE
        (target / "_build_info.py").write_text(
            "# Written at build time: the torch this build of openreg-ops-extra is for.\n"
            f"TORCH_VERSION = {TORCH_VERSION!r}\n"
        )


openreg_runtime = installed_paths("openreg_runtime")
openreg_torch = installed_paths("openreg_torch")
torch_include = openreg_torch.get_include()
extension = CppExtension(
    name=f"{PACKAGE}._C",
    sources=sources(),
    # <openreg_torch/...> for our includes; openreg-torch's headers include each other
    # as "runtime/..." relative to their own root, hence the second directory.
    include_dirs=[str(CSRC), torch_include, os.path.join(torch_include, "openreg_torch"),
                  openreg_runtime.get_include()],
    library_dirs=[openreg_torch.get_library_dir()],
    libraries=["openreg_torch"],
    extra_compile_args=COMPILE_ARGS,
    # _C sits in site-packages/openreg_ops_extra/; its sibling's library next door.
    extra_link_args=["-Wl,-rpath,$ORIGIN/../openreg_torch/lib", *LINK_ARGS],
)

build_dir = os.environ.get("OPENREG_BUILD_DIR")
if SANITIZE:
    # Sanitized and normal objects never share a build directory (see openreg-torch).
    build_dir = (build_dir or "build") + "-sanitize"
setup(
    ext_modules=[extension],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True), "build_py": BuildPy},
    install_requires=[f"torch=={TORCH_RELEASE}", "openreg-torch>=0.1,<0.2"],
    options={"build": {"build_base": build_dir}} if build_dir else {},
)
