#pragma once

// Bindings of openreg's c10d backend (ProcessGroupOpenReg); openreg_torch.distributed
// wraps them. Registered on request, once torch.distributed has registered c10d's
// Backend class (the base of ours).

#include <pybind11/pybind11.h>

namespace openreg_torch {

void init_distributed_bindings(pybind11::module_& m);

} // namespace openreg_torch
