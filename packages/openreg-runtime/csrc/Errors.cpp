// Error strings and the per-thread last error (cudaGetLastError semantics:
// only failures are recorded; orGetLastError reads and resets).
#include "Errors.h"

#include <cstdarg>
#include <cstdio>
#include <string>

namespace openreg {
namespace {

thread_local orError_t t_lastError = orSuccess;
// Kept separately from the code so a pointer handed out by
// orGetLastErrorMessage stays valid until the next failure.
thread_local std::string t_lastMessage;

}  // namespace

orError_t fail(orError_t code, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  t_lastError = code;
  t_lastMessage = buf;
  return code;
}

}  // namespace openreg

using openreg::t_lastError;
using openreg::t_lastMessage;

extern "C" {

OR_API const char* orGetErrorString(orError_t error) {
  switch (error) {
    case orSuccess: return "no error";
    case orErrorInvalidValue: return "invalid argument";
    case orErrorMemoryAllocation: return "out of memory";
    case orErrorInitializationError: return "initialization error";
    case orErrorNoDevice: return "no openreg device is configured";
    case orErrorInvalidDevice: return "invalid device ordinal";
    case orErrorInvalidDevicePointer: return "invalid device pointer";
    case orErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case orErrorInvalidResourceHandle: return "invalid resource handle";
    case orErrorNotReady: return "device not ready";
    case orErrorForkedProcess:
      return "openreg was initialised in a parent process and cannot be used "
             "in a forked child";
    case orErrorNotSupported: return "operation not supported";
    case orErrorAlreadyMapped: return "IPC handle is already open in this process";
    case orErrorNotMapped: return "pointer is not an open IPC mapping";
    case orErrorIpcInvalidHandle: return "not a valid IPC handle";
    case orErrorIpcExporterGone:
      return "the process that exported the IPC handle cannot be reached";
    case orErrorIpcHandleStale:
      return "the exporter freed the memory or destroyed the event the IPC handle names";
  }
  return "unrecognized error code";
}

OR_API const char* orGetErrorName(orError_t error) {
  switch (error) {
    case orSuccess: return "orSuccess";
    case orErrorInvalidValue: return "orErrorInvalidValue";
    case orErrorMemoryAllocation: return "orErrorMemoryAllocation";
    case orErrorInitializationError: return "orErrorInitializationError";
    case orErrorNoDevice: return "orErrorNoDevice";
    case orErrorInvalidDevice: return "orErrorInvalidDevice";
    case orErrorInvalidDevicePointer: return "orErrorInvalidDevicePointer";
    case orErrorInvalidMemcpyDirection: return "orErrorInvalidMemcpyDirection";
    case orErrorInvalidResourceHandle: return "orErrorInvalidResourceHandle";
    case orErrorNotReady: return "orErrorNotReady";
    case orErrorForkedProcess: return "orErrorForkedProcess";
    case orErrorNotSupported: return "orErrorNotSupported";
    case orErrorAlreadyMapped: return "orErrorAlreadyMapped";
    case orErrorNotMapped: return "orErrorNotMapped";
    case orErrorIpcInvalidHandle: return "orErrorIpcInvalidHandle";
    case orErrorIpcExporterGone: return "orErrorIpcExporterGone";
    case orErrorIpcHandleStale: return "orErrorIpcHandleStale";
  }
  return "orErrorUnknown";
}

OR_API orError_t orGetLastError(void) {
  orError_t e = t_lastError;
  t_lastError = orSuccess;
  return e;
}

OR_API orError_t orPeekAtLastError(void) { return t_lastError; }

OR_API const char* orGetLastErrorMessage(void) {
  return t_lastError == orSuccess ? "" : t_lastMessage.c_str();
}

}  // extern "C"
