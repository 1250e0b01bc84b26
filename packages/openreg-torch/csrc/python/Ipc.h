#pragma once

// Bindings of openreg_torch._C for sharing storages with other processes (the
// counterpart of torch/csrc/CudaIPCTypes and the CUDA parts of StorageSharing.cpp);
// openreg_torch.multiprocessing wraps them.

#include <pybind11/pybind11.h>

namespace openreg_torch {

void init_ipc_bindings(pybind11::module_& m);

} // namespace openreg_torch
