// Events: a (stream, ticket) capture plus an optional completion timestamp.
#pragma once

#include <openreg/openreg.h>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace openreg {

class Stream;
struct Peer;
struct SharedEventState;

struct Event {
  // SlotTable bookkeeping.
  std::atomic<uint32_t> slotGeneration{0};
  uint32_t slotIndex = 0;

  std::mutex mutex;
  int device = 0;
  unsigned flags = 0;
  bool recorded = false;
  Stream* stream = nullptr;
  uint64_t ticket = 0;
  // Bumped by every record and by destroy, so a stamp queued for an earlier
  // record (or an earlier life of this object) is ignored.
  uint64_t seq = 0;
  int64_t timeNs = -1;  // steady clock at completion; -1 until stamped

  // Interprocess events (orEventInterprocess, or opened from a handle): every
  // record and wait goes through the state shared with other processes.
  // Fixed for the life of the event.
  SharedEventState* shared = nullptr;
  uint32_t sharedSlot = 0;
  uint32_t sharedGeneration = 0;
  int32_t sharedPid = 0;     // the exporter
  uint64_t sharedNonce = 0;
  Peer* peer = nullptr;      // opened from another process's handle

  bool timing() const { return (flags & orEventDisableTiming) == 0; }
  // The captured work; false when never recorded.
  bool capture(Stream** stream, uint64_t* ticket);
};

// Called by a stream's worker when it reaches an event's marker.
void stampEvent(Event* event, uint64_t seq);
int64_t steadyNowNs();
// orErrorInvalidResourceHandle for NULL, unknown or destroyed handles.
orError_t resolveEvent(orEvent_t handle, Event** out);
// A new event of this process standing for another process's event.
orError_t createImportedEvent(orEvent_t* event, int device, SharedEventState* state,
                              uint32_t slot, uint32_t generation, Peer* peer, int32_t pid,
                              uint64_t nonce);

}  // namespace openreg
