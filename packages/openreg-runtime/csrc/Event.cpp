// Event calls (cudaEventCreate, cudaEventRecord, cudaEventElapsedTime, ...).
#include "Event.h"

#include <unistd.h>

#include <chrono>

#include "Errors.h"
#include "Ipc.h"
#include "IpcEvent.h"
#include "Runtime.h"
#include "SlotTable.h"
#include "Stream.h"

namespace openreg {
namespace {

SlotTable<Event>& eventTable() {
  static auto* table = new SlotTable<Event>;  // leaked: workers outlive statics
  return *table;
}

constexpr unsigned kValidEventFlags =
    orEventBlockingSync | orEventDisableTiming | orEventInterprocess;

// Fills a slot handed out by the table. `init` runs before the handle is
// valid; `shared` fields stay as given for the event's life.
struct EventInit {
  int device;
  unsigned flags;
  SharedEventState* shared = nullptr;
  uint32_t sharedSlot = 0;
  uint32_t sharedGeneration = 0;
  int32_t sharedPid = 0;
  uint64_t sharedNonce = 0;
  Peer* peer = nullptr;
};

Event* acquireEvent(const EventInit& init, uintptr_t* handle) {
  return eventTable().acquire(handle, [&](Event& fresh) {
    std::lock_guard<std::mutex> lock(fresh.mutex);
    fresh.device = init.device;
    fresh.flags = init.flags;
    fresh.recorded = false;
    fresh.stream = nullptr;
    fresh.timeNs = -1;
    fresh.shared = init.shared;
    fresh.sharedSlot = init.sharedSlot;
    fresh.sharedGeneration = init.sharedGeneration;
    fresh.sharedPid = init.sharedPid;
    fresh.sharedNonce = init.sharedNonce;
    fresh.peer = init.peer;
  });
}

}  // namespace

int64_t steadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool Event::capture(Stream** s, uint64_t* t) {
  std::lock_guard<std::mutex> lock(mutex);
  if (!recorded) return false;
  *s = stream;
  *t = ticket;
  return true;
}

void stampEvent(Event* event, uint64_t seq) {
  int64_t now = steadyNowNs();
  std::lock_guard<std::mutex> lock(event->mutex);
  if (event->seq == seq) event->timeNs = now;
}

orError_t resolveEvent(orEvent_t handle, Event** out) {
  Event* e = eventTable().lookup(reinterpret_cast<uintptr_t>(handle));
  if (e == nullptr) {
    return fail(orErrorInvalidResourceHandle,
                "event handle %p is not a live event (destroyed, or never created "
                "by orEventCreate)",
                static_cast<void*>(handle));
  }
  *out = e;
  return orSuccess;
}

orError_t createImportedEvent(orEvent_t* event, int device, SharedEventState* state,
                              uint32_t slot, uint32_t generation, Peer* peer, int32_t pid,
                              uint64_t nonce) {
  EventInit init{device, orEventInterprocess | orEventDisableTiming, state, slot,
                 generation, pid, nonce, peer};
  uintptr_t handle = 0;
  if (acquireEvent(init, &handle) == nullptr) {
    return fail(orErrorMemoryAllocation, "too many live events");
  }
  *event = reinterpret_cast<orEvent_t>(handle);
  return orSuccess;
}

}  // namespace openreg

using namespace openreg;

namespace {

// An event usable for timing: created with timing and recorded.
orError_t timedCapture(orEvent_t handle, Event* e, Stream** s, uint64_t* ticket) {
  std::lock_guard<std::mutex> lock(e->mutex);
  if (!e->timing()) {
    return fail(orErrorInvalidResourceHandle,
                "event %p was created with orEventDisableTiming and has no time",
                static_cast<void*>(handle));
  }
  if (!e->recorded) {
    return fail(orErrorInvalidResourceHandle,
                "event %p was never recorded; call orEventRecord first",
                static_cast<void*>(handle));
  }
  *s = e->stream;
  *ticket = e->ticket;
  return orSuccess;
}

// The completion time, or orErrorNotReady.
orError_t completionTime(orEvent_t handle, Event* e, Stream* s, uint64_t ticket,
                         int64_t* ns) {
  // The worker writes the stamp before it publishes the completion.
  if (s->reached(ticket)) {
    std::lock_guard<std::mutex> lock(e->mutex);
    if (e->timeNs >= 0) {
      *ns = e->timeNs;
      return orSuccess;
    }
  }
  return fail(orErrorNotReady, "event %p has not completed yet",
              static_cast<void*>(handle));
}

}  // namespace

extern "C" {

OR_API orError_t orEventCreate(orEvent_t* event) {
  return orEventCreateWithFlags(event, orEventDefault);
}

OR_API orError_t orEventCreateWithFlags(orEvent_t* event, unsigned int flags) {
  OR_ENTER();
  if (event == nullptr) return fail(orErrorInvalidValue, "orEventCreate: event is NULL");
  if ((flags & ~kValidEventFlags) != 0) {
    return fail(orErrorInvalidValue,
                "orEventCreateWithFlags: unknown flags 0x%x (valid: "
                "orEventBlockingSync 0x1, orEventDisableTiming 0x2, "
                "orEventInterprocess 0x4)",
                flags);
  }
  OR_RETURN_IF_ERROR(checkDeviceIndex(t_currentDevice));
  EventInit init{t_currentDevice, flags};
  if (flags & orEventInterprocess) {
    if (!(flags & orEventDisableTiming)) {
      return fail(orErrorInvalidValue,
                  "orEventCreateWithFlags: orEventInterprocess requires "
                  "orEventDisableTiming (an interprocess event has no time)");
    }
    OR_RETURN_IF_ERROR(allocateSharedEvent(init.device, &init.shared, &init.sharedSlot,
                                           &init.sharedGeneration));
    init.sharedPid = int32_t(getpid());
    init.sharedNonce = ipcNonce();
  }
  uintptr_t handle = 0;
  Event* e = acquireEvent(init, &handle);
  if (e == nullptr) {
    if (init.shared != nullptr) destroySharedEvent(init.sharedSlot);
    return fail(orErrorMemoryAllocation, "too many live events");
  }
  *event = reinterpret_cast<orEvent_t>(handle);
  return orSuccess;
}

OR_API orError_t orEventDestroy(orEvent_t event) {
  OR_ENTER();
  Event* e;
  OR_RETURN_IF_ERROR(resolveEvent(event, &e));
  if (!eventTable().retire(e, reinterpret_cast<uintptr_t>(event))) {
    return resolveEvent(event, &e);  // lost a race with another destroy
  }
  {
    std::lock_guard<std::mutex> lock(e->mutex);
    ++e->seq;  // pending stamps for this life are now ignored
    e->recorded = false;
  }
  if (e->peer != nullptr) {
    closeImportedEvent(e->peer, e->sharedSlot, e->sharedGeneration);
  } else if (e->shared != nullptr) {
    destroySharedEvent(e->sharedSlot);
  }
  eventTable().recycle(e);
  return orSuccess;
}

OR_API orError_t orEventRecord(orEvent_t event, orStream_t stream) {
  OR_ENTER();
  Event* e;
  OR_RETURN_IF_ERROR(resolveEvent(event, &e));
  Stream* s;
  OR_RETURN_IF_ERROR(resolveStream(stream, &s));
  std::lock_guard<std::mutex> lock(e->mutex);
  if (e->device != s->device()) {
    return fail(orErrorInvalidValue,
                "event %p belongs to device %d but stream %p to device %d; record "
                "events on a stream of their own device",
                static_cast<void*>(event), e->device, static_cast<void*>(stream),
                s->device());
  }
  if (e->shared != nullptr) {
    uint64_t n = beginSharedRecord(e->shared);
    if (s->recordShared(e->shared, e->sharedGeneration, n)) {
      completeSharedRecord(e->shared, e->sharedGeneration, n);
    }
    return orSuccess;
  }
  uint64_t seq = ++e->seq;
  e->timeNs = -1;
  bool done = false;
  e->ticket = s->recordEvent(e, seq, e->timing(), &done);
  if (done) e->timeNs = steadyNowNs();
  e->stream = s;
  e->recorded = true;
  return orSuccess;
}

OR_API orError_t orEventQuery(orEvent_t event) {
  OR_ENTER();
  Event* e;
  OR_RETURN_IF_ERROR(resolveEvent(event, &e));
  if (e->shared != nullptr) {
    if (sharedRecordDone(e->shared, e->shared->recorded.load(std::memory_order_acquire))) {
      return orSuccess;
    }
    return fail(orErrorNotReady, "interprocess event %p has not completed yet",
                static_cast<void*>(event));
  }
  Stream* s;
  uint64_t ticket;
  if (!e->capture(&s, &ticket) || s->reached(ticket)) return orSuccess;
  return fail(orErrorNotReady, "event %p has not completed yet",
              static_cast<void*>(event));
}

OR_API orError_t orEventSynchronize(orEvent_t event) {
  OR_ENTER();
  Event* e;
  OR_RETURN_IF_ERROR(resolveEvent(event, &e));
  if (e->shared != nullptr) {
    return waitSharedRecord(e->shared, e->sharedGeneration,
                            e->shared->recorded.load(std::memory_order_acquire));
  }
  Stream* s;
  uint64_t ticket;
  if (!e->capture(&s, &ticket)) return orSuccess;
  // From work running on that stream, only earlier work can be waited for.
  if (t_activeStream == s && ticket >= t_activeTicket) ticket = t_activeTicket - 1;
  s->waitFor(ticket);
  return orSuccess;
}

OR_API orError_t orEventElapsedTime(float* ms, orEvent_t start, orEvent_t end) {
  OR_ENTER();
  if (ms == nullptr) return fail(orErrorInvalidValue, "orEventElapsedTime: ms is NULL");
  Event* a;
  Event* b;
  OR_RETURN_IF_ERROR(resolveEvent(start, &a));
  OR_RETURN_IF_ERROR(resolveEvent(end, &b));
  Stream *sa, *sb;
  uint64_t ta, tb;
  OR_RETURN_IF_ERROR(timedCapture(start, a, &sa, &ta));
  OR_RETURN_IF_ERROR(timedCapture(end, b, &sb, &tb));
  int64_t t0, t1;
  OR_RETURN_IF_ERROR(completionTime(start, a, sa, ta, &t0));
  OR_RETURN_IF_ERROR(completionTime(end, b, sb, tb, &t1));
  // Microsecond resolution, as documented (and as CUDA reports).
  int64_t us = (t1 - t0) / 1000;
  *ms = float(double(us) / 1000.0);
  return orSuccess;
}

}  // extern "C"
