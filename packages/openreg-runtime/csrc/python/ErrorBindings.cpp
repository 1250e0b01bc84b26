// Error queries and the error codes.
#include "Check.h"

namespace openreg::python {

void bindErrors(py::module_& m) {
  m.def("_get_error_string", [](int code) { return orGetErrorString(orError_t(code)); });
  m.def("_get_error_name", [](int code) { return orGetErrorName(orError_t(code)); });
  m.def("_get_last_error", [] { return int(orGetLastError()); });
  m.def("_peek_at_last_error", [] { return int(orPeekAtLastError()); });
  m.def("_get_last_error_message", [] { return std::string(orGetLastErrorMessage()); });
  // Raw status of orSetDevice, without raising: lets tests observe the
  // last-error state exactly as C callers see it.
  m.def("_set_device_status", [](int device) { return int(orSetDevice(device)); });

  py::dict codes;
  for (orError_t e : {orSuccess, orErrorInvalidValue, orErrorMemoryAllocation,
                      orErrorInitializationError, orErrorNoDevice, orErrorInvalidDevice,
                      orErrorInvalidDevicePointer, orErrorInvalidMemcpyDirection,
                      orErrorInvalidResourceHandle, orErrorNotReady, orErrorForkedProcess,
                      orErrorNotSupported, orErrorAlreadyMapped, orErrorNotMapped,
                      orErrorIpcInvalidHandle, orErrorIpcExporterGone,
                      orErrorIpcHandleStale}) {
    codes[orGetErrorName(e)] = int(e);
  }
  m.attr("_error_codes") = codes;
}

}  // namespace openreg::python
