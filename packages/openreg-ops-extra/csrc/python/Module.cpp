// openreg_ops_extra._C: loading it registers the kernels (see OpenRegExtra.cpp); the
// bindings are private helpers for tests and diagnostics.

#include <pybind11/pybind11.h>

#include "native/AbsKernel.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "openreg_ops_extra native kernels (private bindings)";
  m.def("_abs_stub_calls", &at::native::openreg_extra::abs_kernel_calls,
        "How many times the openreg kernel of abs_stub has run in this process");
}
