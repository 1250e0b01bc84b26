"""Run Python with the sanitizer runtimes that an OPENREG_SANITIZE=1 build of
openreg-runtime needs, e.g.

    python packages/openreg-runtime/tests/run_sanitized.py -m pytest packages/openreg-runtime/tests

The interpreter itself is not instrumented, so AddressSanitizer's runtime has
to be preloaded: it must come first in the process to intercept malloc/free.
Used by the py311-sanitize tox env; every option below says why it is set.
Options already in the environment are appended, so they win.
"""

import os
import subprocess
import sys
import sysconfig

# DOC START: sanitizer-options
ASAN_OPTIONS = [
    # CPython never frees interned strings, static types and module state at
    # exit, and the runtime leaks its device tables and stream/event pools on
    # purpose (worker threads may outlive static destructors): a leak report
    # would list those, not bugs.
    "detect_leaks=0",
    # Leave SIGSEGV/SIGBUS alone: the runtime's own diagnostic for host
    # accesses to device memory (and Python's faulthandler behind it) is what
    # test_fault.py checks, and it must see the signal exactly as in a normal
    # run. ASan still checks every instrumented access through shadow memory.
    "handle_segv=0",
    "handle_sigbus=0",
    # A finding stops the process (the default, stated because it is the point).
    "halt_on_error=1",
]
UBSAN_OPTIONS = [
    # Belt and braces with -fno-sanitize-recover=undefined: stop at the first
    # finding, with a stack trace, so the test run fails.
    "halt_on_error=1",
    "print_stacktrace=1",
]
# DOC END: sanitizer-options


def runtime_library(name: str) -> str:
    """The compiler's copy of a sanitizer runtime (the one the build linked)."""
    compiler = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "gcc").split()[0]
    path = subprocess.run([compiler, f"-print-file-name={name}"], capture_output=True,
                          text=True, check=True).stdout.strip()
    if not os.path.isabs(path) or not os.path.exists(path):
        sys.exit(f"run_sanitized: {compiler} does not know {name}; install the "
                 "compiler's sanitizer runtimes (e.g. libasan8 and libubsan1 for gcc 12)")
    return os.path.realpath(path)


def main() -> None:
    env = dict(os.environ)
    # UBSan's runtime would be loaded with libopenreg.so anyway; preloading it
    # too keeps both runtimes initialised before any Python code runs.
    preload = [runtime_library("libasan.so"), runtime_library("libubsan.so")]
    env["LD_PRELOAD"] = ":".join(preload + [p for p in [env.get("LD_PRELOAD")] if p])
    env["ASAN_OPTIONS"] = ":".join(ASAN_OPTIONS + [p for p in [env.get("ASAN_OPTIONS")] if p])
    env["UBSAN_OPTIONS"] = ":".join(UBSAN_OPTIONS + [p for p in [env.get("UBSAN_OPTIONS")] if p])
    # Route Python's small objects (bytes, ctypes buffers) through malloc, so
    # they get redzones and an overrun by the runtime's copies is reported.
    env["PYTHONMALLOC"] = "malloc"
    os.execve(sys.executable, [sys.executable, *sys.argv[1:]], env)


if __name__ == "__main__":
    main()
