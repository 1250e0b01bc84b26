#pragma once

// Events of the openreg backend, after c10::cuda::CUDAEvent: an owned runtime event,
// created lazily on the device of the first stream that records it, movable but not
// copyable, destroyed with its owner.

#include <c10/core/Device.h>
#include <openreg/openreg.h>

#include "runtime/OpenRegMacros.h"
#include "runtime/OpenRegStream.h"

namespace c10::openreg {

// DOC START: event-class
class OPENREG_TORCH_API OpenRegEvent {
 public:
  // Without timing unless asked for (orEventDefault), as CUDAEvent.
  OpenRegEvent() noexcept = default;
  explicit OpenRegEvent(unsigned int flags) noexcept : flags_(flags) {}
  ~OpenRegEvent();

  OpenRegEvent(const OpenRegEvent&) = delete;
  OpenRegEvent& operator=(const OpenRegEvent&) = delete;
  OpenRegEvent(OpenRegEvent&& other) noexcept;
  OpenRegEvent& operator=(OpenRegEvent&& other) noexcept;

  bool isCreated() const { return event_ != nullptr; }
  orEvent_t event() const { return event_; }

  // Captures the work issued on `stream` so far. The first record creates the event on
  // the stream's device; later records must use a stream of that device.
  void record(const OpenRegStream& stream);
  // Later work on `stream` waits for the recorded work (no wait if never recorded).
  void block(const OpenRegStream& stream) const;
  // Whether the recorded work has completed (true if never recorded).
  bool query() const;
  void synchronize() const;
  // Milliseconds from this event to `end`: both timed, recorded and completed.
  float elapsed_time(const OpenRegEvent& end) const;

  // Ownership of the runtime event crosses to and from raw handles: the device guard
  // hands its events to c10::Event as void* (see OpenRegGuardImpl.cpp).
  static OpenRegEvent adopt(orEvent_t event, DeviceIndex device) noexcept;
  orEvent_t release() noexcept;

 private:
  void destroy() noexcept;

  unsigned int flags_ = orEventDisableTiming;
  DeviceIndex device_index_ = -1;
  orEvent_t event_ = nullptr;
};
// DOC END: event-class

} // namespace c10::openreg
