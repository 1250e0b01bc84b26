// Interprocess sharing calls (cudaIpcGetMemHandle, cudaIpcOpenMemHandle,
// cudaIpcCloseMemHandle, cudaIpcGetEventHandle, cudaIpcOpenEventHandle).
#include "Ipc.h"

#include <unistd.h>

#include <cstring>

#include "Arena.h"
#include "Device.h"
#include "Errors.h"
#include "Event.h"
#include "IpcEvent.h"
#include "Runtime.h"

namespace openreg {

orError_t decodeHandle(const void* bytes, IpcKind kind, const char* call,
                       IpcHandleData* out) {
  memcpy(out, bytes, sizeof(*out));
  if (out->magic != kIpcMagic || out->version != kIpcVersion) {
    return fail(orErrorIpcInvalidHandle,
                "%s: the bytes are not an openreg IPC handle (or one of another "
                "runtime version)",
                call);
  }
  if (out->kind != kind) {
    return fail(orErrorIpcInvalidHandle, "%s: this is an IPC %s handle, not a%s one", call,
                out->kind == kIpcMemKind ? "memory" : "event",
                kind == kIpcMemKind ? " memory" : "n event");
  }
  if (out->pid <= 0) {
    return fail(orErrorIpcInvalidHandle, "%s: the handle names no process", call);
  }
  return orSuccess;
}

}  // namespace openreg

using namespace openreg;

extern "C" {

// DOC START: orIpcGetMemHandle
OR_API orError_t orIpcGetMemHandle(orIpcMemHandle_t* handle, void* devPtr) {
  OR_ENTER();
  if (handle == nullptr) return fail(orErrorInvalidValue, "orIpcGetMemHandle: handle is NULL");
  uintptr_t p = uintptr_t(devPtr);
  int d = deviceOfView(p);
  if (d < 0) {
    return fail(orErrorInvalidDevicePointer,
                "orIpcGetMemHandle: %p is not device memory", devPtr);
  }
  IpcHandleData h{};
  orError_t err = orSuccess;
  if (reexportImported(devPtr, &h, &err)) {
    // Memory another process exported: hand on that process's allocation.
    OR_RETURN_IF_ERROR(err);
  } else {
    if (importSlotOfView(p, nullptr) >= 0) {
      return fail(orErrorInvalidDevicePointer,
                  "orIpcGetMemHandle: %p is inside memory opened from another process "
                  "but not the pointer orIpcOpenMemHandle returned",
                  devPtr);
    }
    OR_RETURN_IF_ERROR(ensureIpcServer());
    ExportInfo info;
    OR_RETURN_IF_ERROR(device(d).allocator.exportAllocation(p, &info));
    h = IpcHandleData{kIpcMagic, kIpcVersion, kIpcMemKind, int32_t(getpid()), d,
                      ipcNonce(), info.offset, info.size, info.serial, info.ticket, 0};
  }
  memcpy(handle, &h, sizeof(h));
  return orSuccess;
}
// DOC END: orIpcGetMemHandle

OR_API orError_t orIpcOpenMemHandle(void** devPtr, orIpcMemHandle_t handle,
                                    unsigned int flags) {
  OR_ENTER();
  if (devPtr == nullptr) return fail(orErrorInvalidValue, "orIpcOpenMemHandle: devPtr is NULL");
  *devPtr = nullptr;
  if ((flags & ~unsigned(orIpcMemLazyEnablePeerAccess)) != 0) {
    return fail(orErrorInvalidValue,
                "orIpcOpenMemHandle: unknown flags 0x%x (valid: "
                "orIpcMemLazyEnablePeerAccess 0x1)",
                flags);
  }
  IpcHandleData h;
  OR_RETURN_IF_ERROR(decodeHandle(&handle, kIpcMemKind, "orIpcOpenMemHandle", &h));
  return importMemory(h, devPtr);
}

OR_API orError_t orIpcCloseMemHandle(void* devPtr) {
  OR_ENTER();
  return closeImportedMemory(devPtr);
}

OR_API orError_t orIpcGetEventHandle(orIpcEventHandle_t* handle, orEvent_t event) {
  OR_ENTER();
  if (handle == nullptr) {
    return fail(orErrorInvalidValue, "orIpcGetEventHandle: handle is NULL");
  }
  Event* e;
  OR_RETURN_IF_ERROR(resolveEvent(event, &e));
  if (e->shared == nullptr) {
    return fail(orErrorInvalidResourceHandle,
                "orIpcGetEventHandle: event %p was not created with orEventInterprocess",
                static_cast<void*>(event));
  }
  if (e->peer == nullptr) OR_RETURN_IF_ERROR(ensureIpcServer());
  IpcHandleData h{kIpcMagic,         kIpcVersion,          kIpcEventKind, e->sharedPid,
                  e->device,         e->sharedNonce,       e->sharedSlot, 0,
                  e->sharedGeneration, 0,                  0};
  memcpy(handle, &h, sizeof(h));
  return orSuccess;
}

OR_API orError_t orIpcOpenEventHandle(orEvent_t* event, orIpcEventHandle_t handle) {
  OR_ENTER();
  if (event == nullptr) return fail(orErrorInvalidValue, "orIpcOpenEventHandle: event is NULL");
  IpcHandleData h;
  OR_RETURN_IF_ERROR(decodeHandle(&handle, kIpcEventKind, "orIpcOpenEventHandle", &h));
  SharedEventState* state = nullptr;
  Peer* peer = nullptr;
  OR_RETURN_IF_ERROR(importEvent(h, &state, &peer));
  orError_t err = createImportedEvent(event, h.device, state, uint32_t(h.offset),
                                      uint32_t(h.serial), peer, h.pid, h.nonce);
  if (err != orSuccess) closeImportedEvent(peer, uint32_t(h.offset), uint32_t(h.serial));
  return err;
}

OR_API orError_t orIpcGetMemRefCount(const void* devPtr, int* openCount,
                                     int* unopenedCount) {
  OR_ENTER();
  if (openCount == nullptr || unopenedCount == nullptr) {
    return fail(orErrorInvalidValue, "orIpcGetMemRefCount: a count pointer is NULL");
  }
  uintptr_t p = uintptr_t(devPtr);
  int d = deviceOfView(p);
  if (d < 0 || importSlotOfView(p, nullptr) >= 0) {
    return fail(orErrorInvalidDevicePointer,
                "orIpcGetMemRefCount: %p is not memory this process allocated", devPtr);
  }
  return device(d).allocator.refCounts(p, openCount, unopenedCount);
}

OR_API orError_t orIpcDiscardMemHandle(const orIpcMemHandle_t* handle) {
  OR_ENTER();
  if (handle == nullptr) {
    return fail(orErrorInvalidValue, "orIpcDiscardMemHandle: handle is NULL");
  }
  IpcHandleData h;
  OR_RETURN_IF_ERROR(decodeHandle(handle, kIpcMemKind, "orIpcDiscardMemHandle", &h));
  if (h.pid != getpid() || h.nonce != ipcNonce()) {
    return fail(orErrorInvalidValue,
                "orIpcDiscardMemHandle: the handle was created by process %d; only its "
                "exporter can discard it",
                int(h.pid));
  }
  OR_RETURN_IF_ERROR(checkDeviceIndex(h.device));
  device(h.device).allocator.discardTicket(h.offset, h.serial, h.ticket);
  return orSuccess;
}

}  // extern "C"
