"""Run Python with the sanitizer runtimes that an OPENREG_SANITIZE=1 build of
the openreg packages needs, e.g.

    python packages/openreg-runtime/tests/run_sanitized.py -m pytest -p sanitizer_leak_check \
        packages/openreg-runtime/tests

The interpreter and libtorch are not instrumented, so AddressSanitizer's
runtime has to be preloaded: it must come first in the process to intercept
malloc/free. Only openreg's own libraries are checked, but every allocation
of the process goes through ASan's allocator, so a use-after-free or overflow
by openreg of memory libtorch or Python allocated is caught too. Used by the
py311-sanitize tox env; every option below says why it is set. Options
already in the environment are appended, so they win.
"""

import os
import subprocess
import sys
import sysconfig

# DOC START: sanitizer-options
ASAN_OPTIONS = [
    # LeakSanitizer on, but no check at exit: by then CPython has dropped its
    # last references to objects it never frees (interned strings, static
    # types, module state) and static destructors have run, so an exit report
    # lists shutdown, not bugs. The test process checks once, while everything
    # still meant to be alive is reachable, when the pytest session ends
    # (sanitizer_leak_check.py); other processes, e.g. the compilers that
    # inherit the preload, are not leak-checked.
    "detect_leaks=1",
    "leak_check_at_exit=0",
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
LSAN_SUPPRESSIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                 "lsan_suppressions.txt")


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
    # Third-party leaks LeakSanitizer must not report, each explained in the file.
    env["LSAN_OPTIONS"] = ":".join([f"suppressions={LSAN_SUPPRESSIONS}", "print_suppressions=0"]
                                   + [p for p in [env.get("LSAN_OPTIONS")] if p])
    env["UBSAN_OPTIONS"] = ":".join(UBSAN_OPTIONS + [p for p in [env.get("UBSAN_OPTIONS")] if p])
    # Route Python's small objects (bytes, ctypes buffers) through malloc, so
    # they get redzones and an overrun by the runtime's copies is reported.
    env["PYTHONMALLOC"] = "malloc"
    os.execve(sys.executable, [sys.executable, *sys.argv[1:]], env)


if __name__ == "__main__":
    main()
