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
already in the environment are appended, so they win. The command runs as a
child, run again only if LeakSanitizer's tracer crashed during the session's
leak check (run_until_the_leak_check_runs).
"""

import os
import signal
import subprocess
import sys
import sysconfig

# The exit status of a test session whose leak check could not run because LeakSanitizer's
# own stop-the-world tracer crashed ("Tracer caught signal 11 ... LeakSanitizer has
# encountered a fatal error"): a rare crash inside the sanitizer runtime, known in many
# projects (google/sanitizers#1353), seen once in this project's CI after every test had
# passed. sanitizer_leak_check.py exits with it when the session's tests passed; such a
# session is run again, at most RERUNS times.
TRACER_CRASHED = 75
RERUNS = 2

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
    sys.exit(run_until_the_leak_check_runs([sys.executable, *sys.argv[1:]], env))


def run_until_the_leak_check_runs(command: "list[str]", env: "dict[str, str]") -> int:
    """Run `command` and return its exit status, but run it again (at most RERUNS times)
    when it exits with TRACER_CRASHED: its tests had passed, and the leak check could not run.
    Any other status, a leak report among them, is returned as it is."""
    for attempt in range(RERUNS + 1):
        child = subprocess.Popen(command, env=env)
        # Ctrl-C or tox's timeout reach the wrapper: hand them on, and wait for the child.
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda signum, frame: child.send_signal(signum))
        status = child.wait()
        if status != TRACER_CRASHED or attempt == RERUNS:
            break
        print(f"run_sanitized: LeakSanitizer's tracer crashed (exit {TRACER_CRASHED}); "
              f"running the command again ({attempt + 1} of {RERUNS})", file=sys.stderr, flush=True)
    if status < 0:  # killed by a signal: die of the same one
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    return status


if __name__ == "__main__":
    main()
