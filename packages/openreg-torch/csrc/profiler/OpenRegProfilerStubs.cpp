#include "profiler/OpenRegProfilerStubs.h"

#include <c10/core/DeviceGuard.h>
#include <c10/util/ApproximateClock.h>

#include "execution/DeviceLaunch.h"
#include "runtime/OpenRegException.h"
#include "runtime/OpenRegFunctions.h"
#include "runtime/OpenRegStream.h"

namespace c10::openreg::profiler {
namespace {

using torch::profiler::impl::ProfilerVoidEventStub;

// DOC START: profiler-stubs
class OpenRegProfilerStubs final : public torch::profiler::impl::ProfilerStubs {
 public:
  // A timed event recorded on the current stream of the current device.
  void record(DeviceIndex* device, ProfilerVoidEventStub* event,
              int64_t* cpu_ns) const override {
    const DeviceIndex index = current_device();
    if (device != nullptr) {
      *device = index;
    }
    orEvent_t created = nullptr;
    OPENREG_CHECK(orEventCreate(&created));
    *event = std::shared_ptr<void>(created, [](void* held) {
      (void)orEventDestroy(static_cast<orEvent_t>(held));  // a deleter never throws
    });
    if (cpu_ns != nullptr) {
      *cpu_ns = c10::getTime();
    }
    at::native::openreg::launch_event_record(created, getCurrentOpenRegStream(index));
  }

  // Microseconds (as PyTorch's CUDA stubs return) between two recorded events, once both
  // completed.
  float elapsed(const ProfilerVoidEventStub* start,
                const ProfilerVoidEventStub* end) const override {
    auto* first = static_cast<orEvent_t>(start->get());
    auto* second = static_cast<orEvent_t>(end->get());
    OPENREG_CHECK(orEventSynchronize(first));
    OPENREG_CHECK(orEventSynchronize(second));
    float milliseconds = 0;
    OPENREG_CHECK(orEventElapsedTime(&milliseconds, first, second));
    return milliseconds * 1000.0f;
  }

  // No range annotations (NVTX's role) on openreg.
  void mark(const char* /*name*/) const override {}
  void rangePush(const char* /*name*/) const override {}
  void rangePop() const override {}

  bool enabled() const override {
    return true;
  }

  void onEachDevice(std::function<void(int)> op) const override {
    for (DeviceIndex device = 0; device < device_count(); ++device) {
      const DeviceGuard guard(Device(kPrivateUse1, device));
      op(device);
    }
  }

  void synchronize() const override {
    onEachDevice([](int) { OPENREG_CHECK(orDeviceSynchronize()); });
  }
};
// DOC END: profiler-stubs

} // namespace

torch::profiler::impl::ProfilerStubs& profiler_stubs() {
  static OpenRegProfilerStubs stubs;
  return stubs;
}

} // namespace c10::openreg::profiler
