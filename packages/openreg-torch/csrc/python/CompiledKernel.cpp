#include "python/CompiledKernel.h"

#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <cstring>
#include <string>
#include <vector>

#include "execution/CompiledKernel.h"
#include "execution/KernelView.h"
#include "python/WithoutGil.h"

namespace py = pybind11;

namespace openreg_torch {
namespace {

using at::native::openreg::CompiledKernel;

// DOC START: compiled-kernel-call
// Calling a kernel with the wrapper's arguments (tensors for pointers, ints and floats
// for scalars) translates every openreg tensor to its kernel-view address and launches
// the kernel on the current stream of their device.
class PyCompiledKernel {
 public:
  // `kinds` has one letter per argument: 'p' pointer, 'i' int64_t, 'f' float.
  PyCompiledKernel(std::string name, const std::string& library, std::string kinds)
      : kernel_(std::move(name), library), kinds_(std::move(kinds)) {
    for (char kind : kinds_) {
      TORCH_CHECK(kind == 'p' || kind == 'i' || kind == 'f',
                  "openreg: compiled kernel argument kind must be p, i or f, got ", kind);
    }
  }

  void operator()(const py::args& args) const {
    const size_t count = kinds_.size();
    TORCH_CHECK(args.size() == count, "openreg: compiled kernel ", kernel_.name(), " takes ",
                count, " arguments, got ", args.size());
    std::vector<void*> addresses(count);
    std::vector<int64_t> scalars(count);  // ints, and floats stored in their first bytes
    c10::DeviceIndex device = -1;
    for (size_t i = 0; i < count; ++i) {
      switch (kinds_[i]) {
        case 'p':
          addresses[i] = tensor_address(args[i].ptr(), i, device);
          break;
        case 'i':
          scalars[i] = py::cast<int64_t>(args[i]);
          addresses[i] = &scalars[i];
          break;
        default: {
          const float value = py::cast<float>(args[i]);
          std::memcpy(&scalars[i], &value, sizeof(value));
          addresses[i] = &scalars[i];
        }
      }
    }
    // The launch waits for the stream's earlier work: let other Python threads run.
    without_gil([&] { kernel_.launch(device, addresses.data()); });
  }
// DOC END: compiled-kernel-call

  const std::string& name() const {
    return kernel_.name();
  }

 private:
  // The kernel-view address of an openreg tensor's data (a CPU tensor's own address:
  // device code can read host memory). All openreg tensors must be on one device.
  void* tensor_address(PyObject* arg, size_t index, c10::DeviceIndex& device) const {
    TORCH_CHECK_TYPE(THPVariable_Check(arg), "openreg: compiled kernel ", kernel_.name(),
                     " expected a tensor for argument ", index, ", got ",
                     Py_TYPE(arg)->tp_name);
    const at::Tensor& tensor = THPVariable_Unpack(arg);
    if (tensor.device().is_cpu()) {
      return tensor.data_ptr();
    }
    TORCH_CHECK(tensor.device().is_privateuseone(), "openreg: compiled kernel ", kernel_.name(),
                " got a tensor on ", tensor.device(), " for argument ", index);
    const c10::DeviceIndex tensor_device = tensor.device().index();
    TORCH_CHECK(device < 0 || device == tensor_device, "openreg: compiled kernel ",
                kernel_.name(), " got tensors on openreg:", static_cast<int>(device),
                " and openreg:", static_cast<int>(tensor_device));
    device = tensor_device;
    return at::native::openreg::kernel_pointer(tensor.data_ptr());
  }

  CompiledKernel kernel_;
  std::string kinds_;
};

} // namespace

void init_compiled_kernel_bindings(py::module_& m) {
  py::class_<PyCompiledKernel>(m, "_CompiledKernel")
      .def(py::init<std::string, const std::string&, std::string>(), py::arg("name"),
           py::arg("library"), py::arg("kinds"))
      .def("__call__", &PyCompiledKernel::operator())
      .def_property_readonly("name", &PyCompiledKernel::name);
}

} // namespace openreg_torch
