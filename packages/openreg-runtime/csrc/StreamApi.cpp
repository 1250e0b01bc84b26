// Stream handles and the stream calls (cudaStreamCreate, cudaLaunchHostFunc,
// ...). Handles are validated lock-free through a SlotTable.
#include <algorithm>
#include <mutex>

#include "Errors.h"
#include "Event.h"
#include "IpcEvent.h"
#include "Runtime.h"
#include "SlotTable.h"
#include "Stream.h"

namespace openreg {
namespace {

SlotTable<Stream>& streamTable() {
  static auto* table = new SlotTable<Stream>;  // leaked: workers outlive statics
  return *table;
}

std::atomic<Stream*> g_defaultStreams[OR_MAX_DEVICES];
std::mutex g_defaultStreamsMutex;

orError_t invalidStream(orStream_t handle) {
  return fail(orErrorInvalidResourceHandle,
              "stream handle %p is not a live stream (destroyed, or never created "
              "by orStreamCreate)",
              static_cast<void*>(handle));
}

}  // namespace

Stream* defaultStream(int device) {
  Stream* s = g_defaultStreams[device].load(std::memory_order_acquire);
  if (s != nullptr) return s;
  std::lock_guard<std::mutex> lock(g_defaultStreamsMutex);
  s = g_defaultStreams[device].load(std::memory_order_relaxed);
  if (s == nullptr) {
    s = new Stream;  // never destroyed, like the CUDA legacy default stream
    s->open(device, kLeastPriority);
    g_defaultStreams[device].store(s, std::memory_order_release);
  }
  return s;
}

orError_t resolveStream(orStream_t handle, Stream** out) {
  if (handle == nullptr) {
    OR_RETURN_IF_ERROR(checkDeviceIndex(t_currentDevice));
    *out = defaultStream(t_currentDevice);
    return orSuccess;
  }
  Stream* s = streamTable().lookup(reinterpret_cast<uintptr_t>(handle));
  if (s == nullptr) return invalidStream(handle);
  *out = s;
  return orSuccess;
}

void synchronizeDeviceStreams(int device) {
  if (Stream* s = g_defaultStreams[device].load(std::memory_order_acquire)) {
    s->synchronize();
  }
  streamTable().forEachLive([device](Stream& s) {
    if (s.device() == device) s.synchronize();
  });
}

}  // namespace openreg

using namespace openreg;

namespace {

orError_t closedStream(orStream_t stream) {
  return fail(orErrorInvalidResourceHandle,
              "stream %p was destroyed while this call was being issued",
              static_cast<void*>(stream));
}

}  // namespace

extern "C" {

OR_API orError_t orStreamCreate(orStream_t* stream) {
  return orStreamCreateWithPriority(stream, 0, kLeastPriority);
}

OR_API orError_t orStreamCreateWithPriority(orStream_t* stream, unsigned int flags,
                                            int priority) {
  OR_ENTER();
  if (stream == nullptr) return fail(orErrorInvalidValue, "orStreamCreate: stream is NULL");
  if (flags != 0) {
    return fail(orErrorInvalidValue, "orStreamCreateWithPriority: flags must be 0, got %u",
                flags);
  }
  OR_RETURN_IF_ERROR(checkDeviceIndex(t_currentDevice));
  priority = std::min(kLeastPriority, std::max(kGreatestPriority, priority));
  uintptr_t handle = 0;
  int device = t_currentDevice;
  Stream* s = streamTable().acquire(&handle, [&](Stream& fresh) { fresh.open(device, priority); });
  if (s == nullptr) {
    return fail(orErrorMemoryAllocation, "too many live streams (limit %u)",
                SlotTable<Stream>::kChunkSize * SlotTable<Stream>::kMaxChunks);
  }
  *stream = reinterpret_cast<orStream_t>(handle);
  return orSuccess;
}

OR_API orError_t orStreamDestroy(orStream_t stream) {
  OR_ENTER();
  if (stream == nullptr) {
    return fail(orErrorInvalidResourceHandle,
                "the default stream (NULL) cannot be destroyed");
  }
  uintptr_t handle = reinterpret_cast<uintptr_t>(stream);
  Stream* s = streamTable().lookup(handle);
  if (s == nullptr) return invalidStream(stream);
  if (t_activeStream == s) {
    return fail(orErrorNotSupported,
                "stream %p cannot be destroyed by work running on it (a host "
                "function or kernel of that stream)",
                static_cast<void*>(stream));
  }
  if (!streamTable().retire(s, handle)) return invalidStream(stream);
  s->close();
  streamTable().recycle(s);
  return orSuccess;
}

OR_API orError_t orStreamQuery(orStream_t stream) {
  OR_ENTER();
  Stream* s;
  OR_RETURN_IF_ERROR(resolveStream(stream, &s));
  if (s->idle()) return orSuccess;
  return fail(orErrorNotReady, "stream %p still has work pending",
              static_cast<void*>(stream));
}

OR_API orError_t orStreamSynchronize(orStream_t stream) {
  OR_ENTER();
  Stream* s;
  OR_RETURN_IF_ERROR(resolveStream(stream, &s));
  s->synchronize();
  return orSuccess;
}

OR_API orError_t orStreamGetPriority(orStream_t stream, int* priority) {
  OR_ENTER();
  if (priority == nullptr) {
    return fail(orErrorInvalidValue, "orStreamGetPriority: priority is NULL");
  }
  Stream* s;
  OR_RETURN_IF_ERROR(resolveStream(stream, &s));
  *priority = s->priority();
  return orSuccess;
}

OR_API orError_t orStreamGetDevice(orStream_t stream, int* device) {
  OR_ENTER();
  if (device == nullptr) return fail(orErrorInvalidValue, "orStreamGetDevice: device is NULL");
  Stream* s;
  OR_RETURN_IF_ERROR(resolveStream(stream, &s));
  *device = s->device();
  return orSuccess;
}

OR_API orError_t orStreamWaitEvent(orStream_t stream, orEvent_t event,
                                   unsigned int flags) {
  OR_ENTER();
  if (flags != 0) {
    return fail(orErrorInvalidValue, "orStreamWaitEvent: flags must be 0, got %u", flags);
  }
  Stream* s;
  OR_RETURN_IF_ERROR(resolveStream(stream, &s));
  Event* e;
  OR_RETURN_IF_ERROR(resolveEvent(event, &e));
  if (e->shared != nullptr) {
    uint64_t n = e->shared->recorded.load(std::memory_order_acquire);
    if (sharedRecordDone(e->shared, n)) return orSuccess;
    WorkItem wait;
    wait.kind = WorkItem::kSharedWait;
    wait.shared = e->shared;
    wait.sharedGeneration = e->sharedGeneration;
    wait.sharedRecord = n;
    if (!s->enqueue(wait)) return closedStream(stream);
    return orSuccess;
  }
  Stream* recordedOn;
  uint64_t ticket;
  if (!e->capture(&recordedOn, &ticket)) return orSuccess;  // never recorded
  // Same stream: stream order already implies the wait (and a worker waiting
  // on itself would deadlock).
  if (recordedOn == s || recordedOn->reached(ticket)) return orSuccess;
  WorkItem wait;
  wait.kind = WorkItem::kWaitStream;
  wait.other = recordedOn;
  wait.otherTicket = ticket;
  if (!s->enqueue(wait)) return closedStream(stream);
  return orSuccess;
}

OR_API orError_t orLaunchHostFunc(orStream_t stream, orHostFn_t fn, void* userData) {
  OR_ENTER();
  if (fn == nullptr) return fail(orErrorInvalidValue, "orLaunchHostFunc: fn is NULL");
  Stream* s;
  OR_RETURN_IF_ERROR(resolveStream(stream, &s));
  WorkItem item;
  item.kind = WorkItem::kHostFunc;
  item.fn = fn;
  item.userData = userData;
  if (!s->enqueue(item)) return closedStream(stream);
  return orSuccess;
}

// DOC START: orLaunchKernel
OR_API orError_t orLaunchKernel(orStream_t stream, orHostFn_t fn, void* userData) {
  OR_ENTER();
  if (fn == nullptr) return fail(orErrorInvalidValue, "orLaunchKernel: fn is NULL");
  Stream* s;
  OR_RETURN_IF_ERROR(resolveStream(stream, &s));
  // On an idle stream this takes a ticket with one compare-and-swap and
  // publishes its completion with one store; otherwise it waits for the
  // earlier tickets.
  if (!s->runInline([&] { fn(userData); })) return closedStream(stream);
  return orSuccess;
}
// DOC END: orLaunchKernel

}  // extern "C"
