"""The installed package: header, library, exports, and a plain C client."""

import ctypes
import re
import shutil
import struct
from pathlib import Path

import pytest

import openreg_runtime as rt
from runtime_helpers import run_process

HEADER = Path(rt.get_include()) / "openreg" / "openreg.h"
LIBRARY = Path(rt.get_library_dir()) / "libopenreg.so"


def declared_functions():
    return set(re.findall(r"OR_API\s+[\w\s\*]+?\b(or\w+)\(", HEADER.read_text()))


def test_paths_exist():
    assert HEADER.is_file()
    assert LIBRARY.is_file()


def test_every_declared_function_is_exported():
    lib = ctypes.CDLL(str(LIBRARY))
    names = declared_functions()
    assert len(names) == 55
    for name in names:
        assert hasattr(lib, name), name


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs nm")
def test_only_the_c_api_is_exported():
    out = run_process(["nm", "-D", "--defined-only", LIBRARY], timeout=60)
    assert out.returncode == 0, out.stderr
    exported = {line.split()[-1] for line in out.stdout.splitlines()}
    assert exported == declared_functions()


def test_bindings_find_the_library_through_rpath():
    maps = Path("/proc/self/maps").read_text()
    assert str(LIBRARY.resolve()) in maps


C_CLIENT = r"""
#include <openreg/openreg.h>
#include <stdio.h>
#include <string.h>

static void bump(void* p) { ++*(int*)p; }

int main(void) {
  int n = -1;
  if (orGetDeviceCount(&n) != orSuccess || n < 1) return 1;
  void* d = NULL;
  if (orMalloc(&d, 64) != orSuccess) return 2;
  char msg[16] = "from C", back[16] = {0};
  if (orMemcpy(d, msg, sizeof msg, orMemcpyHostToDevice) != orSuccess) return 3;
  if (orMemcpy(back, d, sizeof back, orMemcpyDeviceToHost) != orSuccess) return 4;
  void* k = NULL;
  if (orGetKernelPointer(&k, d) != orSuccess || strcmp((char*)k, "from C") != 0) return 5;
  int calls = 0;
  for (int i = 0; i < 1000; ++i) orLaunchKernel(NULL, bump, &calls);
  if (orSetDevice(n) != orErrorInvalidDevice) return 6;
  printf("%s %d %s\n", back, calls, orGetErrorName(orGetLastError()));
  return orFree(d) == orSuccess ? 0 : 7;
}
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_header_is_plain_c_and_links(tmp_path):
    src = tmp_path / "client.c"
    src.write_text(C_CLIENT)
    exe = tmp_path / "client"
    compiled = run_process(
        ["cc", "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", src,
         f"-I{rt.get_include()}", f"-L{rt.get_library_dir()}", "-lopenreg",
         f"-Wl,-rpath,{rt.get_library_dir()}", "-o", exe],
        timeout=120,
    )
    assert compiled.returncode == 0, compiled.stderr
    out = run_process([exe], timeout=60)
    assert out.returncode == 0, out
    assert out.stdout == "from C 1000 orErrorInvalidDevice\n"


def tls_segment_size(path):
    """p_memsz of the ELF64 PT_TLS program header (0 when the library has none)."""
    data = Path(path).read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2, "expected an ELF64 library"
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        p_type, = struct.unpack_from("<I", data, phoff + i * phentsize)
        if p_type == 7:  # PT_TLS
            return struct.unpack_from("<Q", data, phoff + i * phentsize + 0x28)[0]
    return 0


def test_static_tls_stays_small():
    # The launch path's per-thread state is initial-exec (csrc/ThreadLocal.h), so the
    # library's whole TLS segment is carved from the static reserve glibc keeps for
    # dlopen'ed libraries (about a kilobyte, shared with every such library the process
    # loads later). A large thread_local here would make other libraries' dlopen fail.
    assert 0 < tls_segment_size(LIBRARY) <= 128
