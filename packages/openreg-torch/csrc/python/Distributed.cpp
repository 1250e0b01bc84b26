#include "python/Distributed.h"

#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "distributed/ProcessGroupOpenReg.h"
#include "python/WithoutGil.h"

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
      without_gil([&] { fn(arg); });
    } else {
      fn(arg);
    }
  });
  ProcessGroupOpenReg::set_split_transport(
      [](const c10::intrusive_ptr<c10d::Backend>& transport,
         const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
         const c10::intrusive_ptr<c10d::Backend::Options>& opts) {
        py::gil_scoped_acquire gil;
        py::object made = py::module_::import("openreg_torch.distributed")
                              .attr("_split_transport")(transport, store, ranks, opts->timeout,
                                                        opts->group_name);
        return made.is_none() ? c10::intrusive_ptr<c10d::Backend>()
                              : made.cast<c10::intrusive_ptr<c10d::Backend>>();
      });
  m.def("_register_distributed_classes", [m]() mutable {
    if (py::hasattr(m, "ProcessGroupOpenReg")) {
      return;
    }
    using OrcclOptions = ProcessGroupOpenReg::OrcclOptions;
    py::class_<OrcclOptions, c10d::Backend::Options, c10::intrusive_ptr<OrcclOptions>>(
        m, "_OrcclOptions")
        .def("__copy__",
             [](const OrcclOptions& self) { return c10::make_intrusive<OrcclOptions>(self); })
        .def("__deepcopy__", [](const OrcclOptions& self, const py::dict& /*memo*/) {
          return c10::make_intrusive<OrcclOptions>(self);
        });
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
        .def_property_readonly("transport", &ProcessGroupOpenReg::transport)
        // What dist.split_group copies as the splits' options (as ProcessGroupNCCL's).
        .def_property_readonly("options", &ProcessGroupOpenReg::getBackendOptions)
        // c10d calls this on the ranks left out of a new group made by splitting a bound
        // default group (NCCL's communicators must all take part); orccl's members make
        // their gloo themselves, so the others have nothing to do.
        .def("perform_nocolor_split", [](ProcessGroupOpenReg& /*self*/, c10::Device /*device*/) {});
  });
}
// DOC END: distributed-bindings

} // namespace openreg_torch
