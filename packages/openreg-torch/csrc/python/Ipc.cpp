#include "python/Ipc.h"

#include <c10/core/DeviceGuard.h>
#include <torch/csrc/Storage.h>
#include <torch/csrc/utils/pybind.h>

#include <cstring>

#include "runtime/OpenRegException.h"
#include "runtime/OpenRegFunctions.h"
#include "runtime/OpenRegIpcTypes.h"
#include "python/WithoutGil.h"

namespace py = pybind11;

namespace openreg_torch {
namespace {

const c10::Storage& unpack(py::handle storage) {
  TORCH_CHECK(THPStorage_Check(storage.ptr()), "openreg: expected a torch.UntypedStorage, got ",
              py::str(py::type::handle_of(storage)).cast<std::string>());
  return THPStorage_Unpack(storage.ptr());
}

orEvent_t event(uintptr_t e) { return reinterpret_cast<orEvent_t>(e); }
orStream_t stream(uintptr_t s) { return reinterpret_cast<orStream_t>(s); }

// Interprocess events (torch.openreg.Event(interprocess=True)): runtime events created
// with orEventInterprocess, named by their handle as an int, used on runtime streams.
void bind_interprocess_events(py::module_& m) {
  m.def("_ipc_event_create", [](int device, bool blocking) {
    c10::openreg::check_device_index(static_cast<c10::DeviceIndex>(device));
    const c10::DeviceGuard guard(c10::Device(c10::kPrivateUse1, static_cast<c10::DeviceIndex>(device)));
    orEvent_t e = nullptr;
    OPENREG_CHECK(orEventCreateWithFlags(
        &e, orEventInterprocess | orEventDisableTiming | (blocking ? orEventBlockingSync : 0)));
    return reinterpret_cast<uintptr_t>(e);
  });
  m.def("_ipc_event_handle", [](uintptr_t e) {
    orIpcEventHandle_t handle;
    without_gil([&] { OPENREG_CHECK(orIpcGetEventHandle(&handle, event(e))); });
    return py::bytes(reinterpret_cast<const char*>(&handle), sizeof(handle));
  });
  m.def("_ipc_event_open", [](const py::bytes& bytes) {
    const std::string data = bytes;
    TORCH_CHECK(data.size() == sizeof(orIpcEventHandle_t), "openreg: an IPC event handle is ",
                sizeof(orIpcEventHandle_t), " bytes, got ", data.size());
    orIpcEventHandle_t handle;
    std::memcpy(&handle, data.data(), sizeof(handle));
    orEvent_t e = nullptr;
    without_gil([&] { OPENREG_CHECK(orIpcOpenEventHandle(&e, handle)); });
    return reinterpret_cast<uintptr_t>(e);
  });
  m.def("_ipc_event_record", [](uintptr_t e, uintptr_t s) {
    OPENREG_CHECK(orEventRecord(event(e), stream(s)));
  });
  m.def("_ipc_event_wait", [](uintptr_t e, uintptr_t s) {
    OPENREG_CHECK(orStreamWaitEvent(stream(s), event(e), 0));
  });
  m.def("_ipc_event_query", [](uintptr_t e) {
    const orError_t err = orEventQuery(event(e));
    if (err == orErrorNotReady) {
      (void)orGetLastError();
      return false;
    }
    OPENREG_CHECK(err);
    return true;
  });
  m.def("_ipc_event_synchronize", [](uintptr_t e) {
    without_gil([&] { OPENREG_CHECK(orEventSynchronize(event(e))); });
  });
  m.def("_ipc_event_destroy", [](uintptr_t e) {
    without_gil([&] { OPENREG_CHECK(orEventDestroy(event(e))); });
  });
}

} // namespace

void init_ipc_bindings(py::module_& m) {
  // (device, handle bytes, base pointer, offset of the data in the allocation, nbytes)
  m.def("_ipc_share_storage", [](py::handle storage) {
    const c10::Storage& s = unpack(storage);
    const c10::openreg::SharedStorageInfo info =
        without_gil([&] { return c10::openreg::shareStorage(s); });
    return py::make_tuple(static_cast<int>(info.device), py::bytes(info.handle), info.base,
                          info.offset, info.nbytes);
  });
  m.def("_ipc_open_handle", [](const py::bytes& handle) {
    const std::string bytes = handle;
    return without_gil(
        [&] { return reinterpret_cast<uintptr_t>(c10::openreg::openHandle(bytes)); });
  });
  m.def("_ipc_close_handle", [](uintptr_t base) {
    without_gil([&] { c10::openreg::closeHandle(reinterpret_cast<void*>(base)); });
  });
  m.def("_ipc_wrap_opened_handle", [](int device, uintptr_t base, size_t offset, size_t nbytes) {
    c10::Storage storage = c10::openreg::wrapOpenedHandle(
        static_cast<c10::DeviceIndex>(device), reinterpret_cast<void*>(base), offset, nbytes);
    return py::reinterpret_steal<py::object>(THPStorage_Wrap(std::move(storage)));
  });
  m.def("_ipc_release_unused_handle", [](const py::bytes& handle) {
    const std::string bytes = handle;
    without_gil([&] { c10::openreg::releaseUnusedHandle(bytes); });
  });
  m.def("_ipc_collect", [] { return without_gil([] { return c10::openreg::ipcCollect(); }); });
  m.def("_ipc_memory_stats", [](int device) {
    const auto stats = c10::openreg::ipcMemoryStats(static_cast<c10::DeviceIndex>(device));
    py::dict result;
    result["imported_bytes.current"] = stats.imported_bytes;
    result["imported_bytes.peak"] = stats.imported_bytes_peak;
    result["imported_storages.current"] = stats.imported_storages;
    result["limbo_bytes.current"] = stats.limbo_bytes;
    result["limbo_blocks.current"] = stats.limbo_blocks;
    return result;
  });
  bind_interprocess_events(m);
}

} // namespace openreg_torch
