#include "python/Distributed.h"

#include <torch/csrc/utils/pybind.h>

#include "distributed/ProcessGroupOpenReg.h"

namespace py = pybind11;

namespace openreg_torch {

namespace {
bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}
} // namespace

// DOC START: distributed-bindings
void init_distributed_bindings(py::module_& m) {
  using c10d::openreg::ProcessGroupOpenReg;
  ProcessGroupOpenReg::set_run_without_gil([](void (*fn)(void*), void* arg) {
    // While the interpreter finalizes, a thread taking the GIL is ended by Python: keep it.
    if (PyGILState_Check() != 0 && !interpreter_finalizing()) {
      py::gil_scoped_release without_gil;
      fn(arg);
    } else {
      fn(arg);
    }
  });
  m.def("_register_distributed_classes", [m]() mutable {
    if (py::hasattr(m, "ProcessGroupOpenReg")) {
      return;
    }
    py::class_<ProcessGroupOpenReg, c10d::Backend, c10::intrusive_ptr<ProcessGroupOpenReg>>(
        m, "ProcessGroupOpenReg")
        .def(py::init<int, int, c10::intrusive_ptr<c10d::Backend>>(), py::arg("rank"),
             py::arg("size"), py::arg("transport"))
        .def_static(
            "_unavailable",
            [](int rank, int size, std::string reason) {
              return c10::make_intrusive<ProcessGroupOpenReg>(rank, size, nullptr,
                                                              std::move(reason));
            },
            py::arg("rank"), py::arg("size"), py::arg("reason"))
        .def_static(
            "_unavailable",
            [](int rank, int size, std::string reason,
               c10::intrusive_ptr<c10d::Backend> barrier_backend) {
              return c10::make_intrusive<ProcessGroupOpenReg>(
                  rank, size, nullptr, std::move(reason), std::move(barrier_backend));
            },
            py::arg("rank"), py::arg("size"), py::arg("reason"), py::arg("barrier_backend"))
        .def_property_readonly("transport", &ProcessGroupOpenReg::transport);
  });
}
// DOC END: distributed-bindings

} // namespace openreg_torch
