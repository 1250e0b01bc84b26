#pragma once

// openreg_torch._C._CompiledKernel: how torch.compile's wrapper code calls a kernel
// Inductor generated for openreg (execution/CompiledKernel.h launches it).

#include <pybind11/pybind11.h>

namespace openreg_torch {

void init_compiled_kernel_bindings(pybind11::module_& m);

} // namespace openreg_torch
