#pragma once

// Bindings of openreg_torch._C for memory debugging (the counterpart of
// torch/csrc/cuda/memory_snapshot): recording the allocation history with stack
// traces, snapshots as the dictionaries torch.cuda.memory._snapshot() returns, and the
// per-process memory fraction. openreg_torch.openreg.memory wraps them.

#include <pybind11/pybind11.h>

namespace openreg_torch {

void init_memory_snapshot_bindings(pybind11::module_& m);

} // namespace openreg_torch
