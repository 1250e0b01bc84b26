#include "runtime/OpenRegEvent.h"

#include <c10/core/DeviceGuard.h>

#include <string>
#include <utility>

#include "execution/DeviceLaunch.h"
#include "runtime/OpenRegException.h"

namespace c10::openreg {

OpenRegEvent::~OpenRegEvent() {
  destroy();
}

OpenRegEvent::OpenRegEvent(OpenRegEvent&& other) noexcept
    : flags_(other.flags_),
      device_index_(other.device_index_),
      event_(std::exchange(other.event_, nullptr)) {}

OpenRegEvent& OpenRegEvent::operator=(OpenRegEvent&& other) noexcept {
  if (this != &other) {
    destroy();  // unlike a plain move of the fields, the event held so far is not leaked
    flags_ = other.flags_;
    device_index_ = other.device_index_;
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

// DOC START: event-record
void OpenRegEvent::record(const OpenRegStream& stream) {
  if (!isCreated()) {
    const DeviceGuard guard(stream.device());  // the runtime creates events there
    OPENREG_CHECK(orEventCreateWithFlags(&event_, flags_));
    device_index_ = stream.device_index();
  }
  // An adopted event of unknown device (-1) is checked by the runtime instead.
  TORCH_CHECK(device_index_ < 0 || device_index_ == stream.device_index(),
              "openreg: event on device ", static_cast<int>(device_index_),
              " cannot be recorded on a stream of device ",
              static_cast<int>(stream.device_index()));
  at::native::openreg::launch_event_record(event_, stream);
}
// DOC END: event-record

void OpenRegEvent::block(const OpenRegStream& stream) const {
  if (isCreated()) {
    OPENREG_CHECK(orStreamWaitEvent(stream.stream(), event_, 0));
  }
}

bool OpenRegEvent::query() const {
  return !isCreated() || OPENREG_QUERY(orEventQuery(event_));
}

void OpenRegEvent::synchronize() const {
  if (isCreated()) {
    OPENREG_CHECK(orEventSynchronize(event_));
  }
}

float OpenRegEvent::elapsed_time(const OpenRegEvent& end) const {
  // CUDAEvent's exception types: ValueError for events that cannot be timed (made
  // without timing, never recorded), RuntimeError for work still running. The runtime
  // says which event it is.
  TORCH_CHECK_VALUE(isCreated() && end.isCreated(),
                    "Both events must be recorded before calculating elapsed time.");
  float milliseconds = 0;
  const orError_t error = orEventElapsedTime(&milliseconds, event_, end.event_);
  if (error == orErrorInvalidResourceHandle || error == orErrorNotReady) {
    const std::string why = orGetLastErrorMessage();
    (void)orGetLastError();  // handled here, as OPENREG_CHECK would
    if (error == orErrorInvalidResourceHandle) {
      TORCH_CHECK_VALUE(false, "Both events must be created with argument "
                        "'enable_timing=True' and recorded before calculating elapsed time: ",
                        why);
    }
    TORCH_CHECK(false, "Both events must be completed before calculating elapsed time: ", why);
  }
  OPENREG_CHECK(error);
  return milliseconds;
}

OpenRegEvent OpenRegEvent::adopt(orEvent_t event, DeviceIndex device) noexcept {
  OpenRegEvent adopted;
  adopted.event_ = event;
  adopted.device_index_ = device;
  return adopted;
}

orEvent_t OpenRegEvent::release() noexcept {
  return std::exchange(event_, nullptr);
}

void OpenRegEvent::destroy() noexcept {
  if (event_ != nullptr) {
    // Destructors must not throw. The only failures are a forked child (which cannot
    // reach the parent's events) or a bug; either way the error is dropped here rather
    // than left as the thread's last error for the next call to report.
    if (orEventDestroy(std::exchange(event_, nullptr)) != orSuccess) {
      (void)orGetLastError();
    }
  }
}

} // namespace c10::openreg
