// DDP's Reducer times each sampled iteration (forward, backward compute, backward
// communication) with the timer registered for its parameters' device type; CUDA
// registers one that records events on the current stream. This is openreg's.

#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/csrc/distributed/c10d/reducer_timer.hpp>

#include <array>

namespace c10d::openreg {
namespace {

class OpenRegTimer : public Timer {
 public:
  explicit OpenRegTimer(c10::Device device) : device_(device) {}

  void record(Event event) override {
    // The host time as well: the Reducer's logger reads both.
    Timer::record(event);
    const c10::impl::VirtualGuardImpl impl(c10::kPrivateUse1);
    event_of(event).record(impl.getStream(device_));
  }

  std::optional<int64_t> measureDifference(Event start, Event end) override {
    c10::Event& first = event_of(start);
    c10::Event& last = event_of(end);
    if (!first.was_marked_for_recording() || !last.was_marked_for_recording()) {
      return std::nullopt;
    }
    first.synchronize();
    last.synchronize();
    const double milliseconds = first.elapsedTime(last);
    // As for CUDA: a negative span (the end recorded before the start in an iteration
    // that skipped a phase) is no measurement.
    if (milliseconds < 0) {
      return std::nullopt;
    }
    return static_cast<int64_t>(milliseconds * 1000.0 * 1000.0);
  }

 private:
  c10::Event& event_of(Event event) { return events_.at(static_cast<size_t>(event)); }

  static c10::Event timing_event() {
    return c10::Event(c10::kPrivateUse1, c10::EventFlag::BACKEND_DEFAULT);
  }

  c10::Device device_;
  std::array<c10::Event, 5> events_{timing_event(), timing_event(), timing_event(),
                                    timing_event(), timing_event()};
};

} // namespace

// DOC START: timer-registration
C10_REGISTER_TYPED_CLASS(TimerRegistry, c10::kPrivateUse1, OpenRegTimer)
// DOC END: timer-registration

} // namespace c10d::openreg
