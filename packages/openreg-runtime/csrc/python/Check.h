// Turning runtime error codes into openreg_runtime.OpenRegError.
#pragma once

#include <openreg/openreg.h>
#include <pybind11/pybind11.h>

namespace openreg::python {

namespace py = pybind11;

// Called once at module import with openreg_runtime.errors.OpenRegError.
void setErrorClass(py::handle cls);
// Raise OpenRegError(code, name, the thread's detailed message); resets the
// thread's last error, as handling an error in CUDA code does.
[[noreturn]] void raiseError(orError_t err);

inline void check(orError_t err) {
  if (err != orSuccess) raiseError(err);
}

// Call `fn` without the GIL (it may block on a worker that needs the GIL to
// run a Python host function), then raise on error with the GIL back.
template <class F>
void callReleased(F&& fn) {
  orError_t err;
  {
    py::gil_scoped_release release;
    err = fn();
  }
  check(err);
}

void bindErrors(py::module_& m);
void bindDevice(py::module_& m);
void bindMemory(py::module_& m);
void bindStreams(py::module_& m);
void bindEvents(py::module_& m);
void bindIpc(py::module_& m);
// Only defines _sanitizer_selftest in sanitizer builds.
void bindSanitizerSelfTest(py::module_& m);

}  // namespace openreg::python
