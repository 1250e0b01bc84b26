#include "python/Ipc.h"

#include <torch/csrc/Storage.h>

#include "runtime/OpenRegIpcTypes.h"

namespace py = pybind11;

namespace openreg_torch {
namespace {

const c10::Storage& unpack(py::handle storage) {
  TORCH_CHECK(THPStorage_Check(storage.ptr()), "openreg: expected a torch.UntypedStorage, got ",
              py::str(py::type::handle_of(storage)).cast<std::string>());
  return THPStorage_Unpack(storage.ptr());
}

} // namespace

void init_ipc_bindings(py::module_& m) {
  // (device, handle bytes, base pointer, offset of the data in the allocation, nbytes)
  m.def("_ipc_share_storage", [](py::handle storage) {
    const c10::Storage& s = unpack(storage);
    c10::openreg::SharedStorageInfo info;
    {
      py::gil_scoped_release no_gil;
      info = c10::openreg::shareStorage(s);
    }
    return py::make_tuple(static_cast<int>(info.device), py::bytes(info.handle), info.base,
                          info.offset, info.nbytes);
  });
  m.def("_ipc_open_handle", [](const py::bytes& handle) {
    const std::string bytes = handle;
    py::gil_scoped_release no_gil;
    return reinterpret_cast<uintptr_t>(c10::openreg::openHandle(bytes));
  });
  m.def("_ipc_close_handle", [](uintptr_t base) {
    py::gil_scoped_release no_gil;
    c10::openreg::closeHandle(reinterpret_cast<void*>(base));
  });
  m.def("_ipc_wrap_opened_handle", [](int device, uintptr_t base, size_t offset, size_t nbytes) {
    c10::Storage storage = c10::openreg::wrapOpenedHandle(
        static_cast<c10::DeviceIndex>(device), reinterpret_cast<void*>(base), offset, nbytes);
    return py::reinterpret_steal<py::object>(THPStorage_Wrap(std::move(storage)));
  });
  m.def("_ipc_release_unused_handle", [](const py::bytes& handle) {
    const std::string bytes = handle;
    py::gil_scoped_release no_gil;
    c10::openreg::releaseUnusedHandle(bytes);
  });
  m.def("_ipc_collect", [] {
    py::gil_scoped_release no_gil;
    return c10::openreg::ipcCollect();
  });
}

} // namespace openreg_torch
