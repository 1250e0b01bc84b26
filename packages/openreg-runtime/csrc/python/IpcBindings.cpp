// Interprocess sharing; handles are 64-byte `bytes`.
#include <cstring>

#include "Check.h"

namespace openreg::python {
namespace {

template <class Handle>
Handle toHandle(const py::bytes& data) {
  std::string bytes = data;
  if (bytes.size() != sizeof(Handle)) {
    throw py::value_error("an IPC handle is " + std::to_string(sizeof(Handle)) +
                          " bytes, got " + std::to_string(bytes.size()));
  }
  Handle h;
  memcpy(&h, bytes.data(), sizeof(h));
  return h;
}

template <class Handle>
py::bytes fromHandle(const Handle& h) {
  return py::bytes(reinterpret_cast<const char*>(&h), sizeof(h));
}

void* ptr(uintptr_t p) { return reinterpret_cast<void*>(p); }

}  // namespace

void bindIpc(py::module_& m) {
  m.def("_ipc_get_mem_handle", [](uintptr_t p) {
    orIpcMemHandle_t h;
    callReleased([&] { return orIpcGetMemHandle(&h, ptr(p)); });
    return fromHandle(h);
  });
  m.def(
      "_ipc_open_mem_handle",
      [](const py::bytes& handle, unsigned flags) {
        orIpcMemHandle_t h = toHandle<orIpcMemHandle_t>(handle);
        void* p = nullptr;
        callReleased([&] { return orIpcOpenMemHandle(&p, h, flags); });
        return reinterpret_cast<uintptr_t>(p);
      },
      py::arg("handle"), py::arg("flags") = 0);
  m.def("_ipc_close_mem_handle",
        [](uintptr_t p) { callReleased([&] { return orIpcCloseMemHandle(ptr(p)); }); });
  m.def("_ipc_get_event_handle", [](uintptr_t e) {
    orIpcEventHandle_t h;
    callReleased([&] { return orIpcGetEventHandle(&h, reinterpret_cast<orEvent_t>(e)); });
    return fromHandle(h);
  });
  m.def("_ipc_open_event_handle", [](const py::bytes& handle) {
    orIpcEventHandle_t h = toHandle<orIpcEventHandle_t>(handle);
    orEvent_t e = nullptr;
    callReleased([&] { return orIpcOpenEventHandle(&e, h); });
    return reinterpret_cast<uintptr_t>(e);
  });
  m.def("_ipc_get_mem_ref_count", [](uintptr_t p) {
    int opens = 0, unopened = 0;
    check(orIpcGetMemRefCount(ptr(p), &opens, &unopened));
    return py::make_tuple(opens, unopened);
  });
  m.def("_ipc_discard_mem_handle", [](const py::bytes& handle) {
    orIpcMemHandle_t h = toHandle<orIpcMemHandle_t>(handle);
    check(orIpcDiscardMemHandle(&h));
  });
  m.attr("_IPC_HANDLE_SIZE") = OR_IPC_HANDLE_SIZE;
}

}  // namespace openreg::python
