// Per-thread state the launch path reads several times per operator.
#pragma once

// initial-exec: an access is one %fs-relative load instead of a __tls_get_addr call
// (seven of them per kernel launch in the general-dynamic model a shared library gets by
// default). The cost: the library's whole TLS segment is then carved from the small
// static reserve glibc keeps for libraries loaded by dlopen, so every thread_local in
// libopenreg must stay small (test_packaging.py checks the segment: 64 bytes today).
// openreg-torch does the same for its per-operator ones (OPENREG_HOT_THREAD_LOCAL).
#define OR_HOT_THREAD_LOCAL thread_local __attribute__((tls_model("initial-exec")))
