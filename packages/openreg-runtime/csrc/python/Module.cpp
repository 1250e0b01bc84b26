// openreg_runtime._C: thin bindings of the C API, pointers as Python ints.
#include "Check.h"

namespace openreg::python {
namespace {

// Leaked reference: the class must outlive any error raised during shutdown.
PyObject* g_errorClass = nullptr;

}  // namespace

void setErrorClass(py::handle cls) {
  g_errorClass = cls.ptr();
  Py_INCREF(g_errorClass);
}

void raiseError(orError_t err) {
  std::string message = orGetLastErrorMessage();
  orGetLastError();
  if (message.empty()) message = orGetErrorString(err);
  const char* name = orGetErrorName(err);
  py::object exc = py::reinterpret_borrow<py::object>(g_errorClass)(
      std::string(name) + ": " + message, int(err), name);
  PyErr_SetObject(g_errorClass, exc.ptr());
  throw py::error_already_set();
}

}  // namespace openreg::python

PYBIND11_MODULE(_C, m) {
  using namespace openreg::python;
  m.doc() = "Private bindings of libopenreg; use the openreg_runtime package.";
  setErrorClass(py::module_::import("openreg_runtime.errors").attr("OpenRegError"));
  bindErrors(m);
  bindDevice(m);
  bindMemory(m);
  bindStreams(m);
  bindEvents(m);
  bindIpc(m);
  bindSanitizerSelfTest(m);
}
