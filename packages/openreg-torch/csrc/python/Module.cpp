// openreg_torch._C: the private bindings the Python package (torch.openreg) wraps.

#include <torch/csrc/Generator.h>
#include <torch/extension.h>

#include "aten/native/Fallback.h"
#include "python/Ipc.h"
#include "python/Stream.h"
#include "runtime/OpenRegException.h"
#include "runtime/OpenRegFunctions.h"
#include "runtime/OpenRegGenerator.h"
#include "runtime/OpenRegHooks.h"
#include "runtime/OpenRegHostAllocator.h"
#include "runtime/OpenRegStream.h"

namespace py = pybind11;

namespace {

using c10::DeviceIndex;

py::object default_generator(DeviceIndex device) {
  const at::Generator& generator = c10::openreg::getDefaultOpenRegGenerator(device);
  // The Python wrapper of a default generator is cached by PyTorch (borrowed ref).
  return py::reinterpret_borrow<py::object>(THPGenerator_initDefaultGenerator(generator));
}

py::dict device_properties(DeviceIndex device) {
  c10::openreg::check_device_index(device);
  orDeviceProp prop{};
  OPENREG_CHECK(orGetDeviceProperties(&prop, device));
  py::dict result;
  result["name"] = std::string(prop.name);
  result["total_memory"] = prop.totalGlobalMem;
  result["multi_processor_count"] = prop.multiProcessorCount;
  result["major"] = prop.major;
  result["minor"] = prop.minor;
  return result;
}

void synchronize(DeviceIndex device) {
  c10::openreg::check_device_index(device);
  const c10::DeviceGuard guard(c10::Device(c10::kPrivateUse1, device));
  py::gil_scoped_release no_gil;
  OPENREG_CHECK(orDeviceSynchronize());
}

} // namespace

// DOC START: module-methods
PYBIND11_MODULE(_C, m) {
  m.doc() = "openreg PyTorch backend (private bindings; use torch.openreg)";
  m.def("_get_device_count", [] { return static_cast<int>(c10::openreg::device_count()); });
  m.def("_get_device", [] { return static_cast<int>(c10::openreg::current_device()); });
  m.def("_set_device", [](DeviceIndex device) { c10::openreg::set_device(device); });
  m.def("_exchange_device", [](DeviceIndex device) {
    return static_cast<int>(c10::openreg::exchange_device(device));
  });
  m.def("_maybe_exchange_device", [](DeviceIndex device) {
    return static_cast<int>(c10::openreg::maybe_exchange_device(device));
  });
  m.def("_init", [] { at::detail::getPrivateUse1Hooks().init(); });
  m.def("_get_default_generator", &default_generator);
  m.def("_get_device_properties", &device_properties);
  m.def("_synchronize", &synchronize);
  m.def("_empty_host_cache", [] { c10::openreg::emptyHostCache(); });
  m.def("_fallback_mode", [] {
    return at::native::openreg::fallback_mode_name(at::native::openreg::fallback_mode());
  });
  m.def("_register_fallback_for", &at::native::openreg::register_fallback_for);
  m.def("_register_direct_kernels", &at::native::openreg::register_direct_kernels);
  m.def("_route_composite_ops_to_fallback",
        &at::native::openreg::route_composite_ops_to_fallback);
  // Through at::globalContext(), as PyTorch's core reaches the hooks (used by tests).
  m.def("_has_primary_context", [](DeviceIndex device) {
    return at::globalContext().getAcceleratorHooksInterface(c10::kPrivateUse1)
        .hasPrimaryContext(device);
  });
  m.def("_device_from_pointer", [](uintptr_t pointer) {
    return at::globalContext().getDeviceFromPtr(reinterpret_cast<void*>(pointer),
                                                c10::kPrivateUse1);
  });
  openreg_torch::init_stream_bindings(m);
  openreg_torch::init_ipc_bindings(m);
}
// DOC END: module-methods
