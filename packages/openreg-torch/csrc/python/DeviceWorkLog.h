#pragma once

// A recording observer of the launch point (execution/DeviceLaunch.h), for tests and
// debugging: which device work the calls of a block issued, in order.

#include <pybind11/pybind11.h>

namespace openreg_torch {

void init_device_work_log_bindings(pybind11::module_& m);

} // namespace openreg_torch
