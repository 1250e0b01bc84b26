// openreg_torch._C: the private bindings the Python package (torch.openreg) wraps.

#include <ATen/Context.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/utils/pybind.h>

#include "aten/OperatorRoutes.h"
#include "aten/OpenRegTensorMeta.h"
#include "aten/native/Fallback.h"
#include "python/CompiledKernel.h"
#include "python/DeviceWorkLog.h"
#include "python/Distributed.h"
#include "python/Ipc.h"
#include "python/MemorySnapshot.h"
#include "python/SanitizerSelfTest.h"
#include "python/Stream.h"
#include "python/WithoutGil.h"
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

py::dict stat_dict(const c10::CachingAllocator::Stat& stat) {
  py::dict result;
  result["current"] = stat.current;
  result["peak"] = stat.peak;
  result["allocated"] = stat.allocated;
  result["freed"] = stat.freed;
  return result;
}

py::dict duration_dict(const c10::CachingAllocator::DurationStat& stat) {
  py::dict result;
  result["total"] = stat.total;
  result["max"] = stat.max;
  result["min"] = stat.min;
  result["count"] = stat.count;
  result["avg"] = stat.count == 0 ? 0 : stat.total / stat.count;
  return result;
}

// The pinned host allocator's statistics, nested as torch.cuda's host statistics are.
py::dict host_memory_stats() {
  const at::HostStats stats = c10::openreg::getPinnedHostAllocator()->get_stats();
  py::dict result;
  result["allocations"] = stat_dict(stats.allocations);
  result["allocated_bytes"] = stat_dict(stats.allocated_bytes);
  result["active_requests"] = stat_dict(stats.active_requests);
  result["active_bytes"] = stat_dict(stats.active_bytes);
  result["num_host_alloc"] = stats.num_host_alloc;
  result["num_host_free"] = stats.num_host_free;
  result["host_alloc_time"] = duration_dict(stats.host_alloc_time);
  result["host_free_time"] = duration_dict(stats.host_free_time);
  return result;
}

void synchronize(DeviceIndex device) {
  c10::openreg::check_device_index(device);
  const c10::DeviceGuard guard(c10::Device(c10::kPrivateUse1, device));
  openreg_torch::without_gil([] { OPENREG_CHECK(orDeviceSynchronize()); });
}

} // namespace

// DOC START: module-methods
PYBIND11_MODULE(_C, m) {
  m.doc() = "openreg PyTorch backend (private bindings; use torch.openreg)";
  // Which thread finalizes the interpreter (python/WithoutGil.h).
  openreg_torch::record_main_thread(
      py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>());
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
  m.def("_is_in_bad_fork", [] { return c10::openreg::in_bad_fork(); });
  m.def("_get_default_generator", &default_generator);
  m.def("_synchronize", &synchronize);
  m.def("_empty_host_cache", [] { c10::openreg::emptyHostCache(); });
  m.def("_host_memory_stats", &host_memory_stats);
  m.def("_reset_peak_host_memory_stats",
        [] { c10::openreg::getPinnedHostAllocator()->reset_peak_stats(); });
  m.def("_reset_accumulated_host_memory_stats",
        [] { c10::openreg::getPinnedHostAllocator()->reset_accumulated_stats(); });
  m.def("_fallback_mode", [] {
    return at::native::openreg::fallback_mode_name(at::native::openreg::fallback_mode());
  });
  m.def("_register_fallback_for", &at::openreg::register_fallback_for);
  m.def("_route_of", &at::openreg::route_of);
  m.def("_set_layout_tag", &at::native::openreg::set_layout_tag);
  m.def("_get_layout_tag", &at::native::openreg::layout_tag);
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
  openreg_torch::init_device_work_log_bindings(m);
  openreg_torch::init_distributed_bindings(m);
  openreg_torch::init_ipc_bindings(m);
  openreg_torch::init_memory_snapshot_bindings(m);
  openreg_torch::init_compiled_kernel_bindings(m);
  openreg_torch::init_sanitizer_selftest_bindings(m);
}
// DOC END: module-methods
