#include "python/Distributed.h"

#include <torch/csrc/utils/pybind.h>

#include "distributed/ProcessGroupOpenReg.h"

namespace py = pybind11;

namespace openreg_torch {

// DOC START: distributed-bindings
void init_distributed_bindings(py::module_& m) {
  using c10d::openreg::ProcessGroupOpenReg;
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
        .def_property_readonly("transport", &ProcessGroupOpenReg::transport);
  });
}
// DOC END: distributed-bindings

} // namespace openreg_torch
