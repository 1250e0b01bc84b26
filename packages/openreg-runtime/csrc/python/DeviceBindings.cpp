// Device management.
#include <vector>

#include "Check.h"

namespace openreg::python {

void bindDevice(py::module_& m) {
  m.def("_get_device_count", [] {
    int n = 0;
    check(orGetDeviceCount(&n));
    return n;
  });
  // Never initialise the runtime (see openreg.h).
  m.def("_get_device_count_no_init", [] {
    int n = 0;
    check(orGetDeviceCountNoInit(&n));
    return n;
  });
  m.def("_is_in_bad_fork", [] {
    int forked = 0;
    check(orIsInBadFork(&forked));
    return forked != 0;
  });
  m.def("_set_device", [](int device) { check(orSetDevice(device)); });
  m.def("_get_device", [] {
    int d = 0;
    check(orGetDevice(&d));
    return d;
  });
  m.def("_device_synchronize", [] { callReleased([] { return orDeviceSynchronize(); }); });
  m.def("_get_device_properties", [](int device) {
    orDeviceProp p;
    check(orGetDeviceProperties(&p, device));
    py::dict d;
    d["name"] = std::string(p.name);
    d["total_memory"] = p.totalGlobalMem;
    d["multi_processor_count"] = p.multiProcessorCount;
    d["major"] = p.major;
    d["minor"] = p.minor;
    d["memory_alignment"] = p.memoryAlignment;
    return d;
  });
  m.def("_mem_get_info", [] {
    size_t free = 0, total = 0;
    check(orMemGetInfo(&free, &total));
    return py::make_tuple(free, total);
  });
  m.def("_device_get_stream_priority_range", [] {
    int least = 0, greatest = 0;
    check(orDeviceGetStreamPriorityRange(&least, &greatest));
    return py::make_tuple(least, greatest);
  });
  m.def("_runtime_get_version", [] {
    int v = 0;
    check(orRuntimeGetVersion(&v));
    return v;
  });
  m.def("_get_process_usage", [] {
    // The list may grow between the calls: ask again until it fits.
    std::vector<orProcessUsage> entries(16);
    int count = 0;
    for (;;) {
      check(orGetProcessUsage(entries.data(), int(entries.size()), &count));
      if (count <= int(entries.size())) break;
      entries.resize(size_t(count) * 2);
    }
    py::list result;
    for (int i = 0; i < count; ++i) {
      const orProcessUsage& e = entries[i];
      py::list used;
      for (int d = 0; d < e.deviceCount; ++d) used.append(e.usedBytes[d]);
      py::dict entry;
      entry["pid"] = e.pid;
      entry["device_memory"] = e.deviceMemory;
      entry["used_bytes"] = used;
      result.append(entry);
    }
    return result;
  });
  m.def("_install_fault_handler", [] { check(orInstallFaultHandler()); });
}

}  // namespace openreg::python
