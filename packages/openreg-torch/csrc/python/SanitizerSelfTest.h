#pragma once

// Deliberate bugs for the sanitizer build's self-test (python/SanitizerSelfTest.cpp).

#include <pybind11/pybind11.h>

namespace openreg_torch {

void init_sanitizer_selftest_bindings(pybind11::module_& m);

} // namespace openreg_torch
