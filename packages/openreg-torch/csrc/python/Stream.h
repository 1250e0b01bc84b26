#pragma once

// Stream and event bindings of openreg_torch._C, after torch/csrc/cuda/Stream.cpp and
// the stream functions of torch/csrc/cuda/Module.cpp. torch.openreg.streams wraps them.

#include <pybind11/pybind11.h>

namespace openreg_torch {

void init_stream_bindings(pybind11::module_& m);

} // namespace openreg_torch
