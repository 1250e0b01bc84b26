// SIGSEGV/SIGBUS diagnostics for host accesses to device memory.
#pragma once

namespace openreg {

// Install (or re-install on top of whoever replaced it) the fault handler.
// Faults outside the device views are passed on to the previous handler.
void installFaultHandler();

}  // namespace openreg
