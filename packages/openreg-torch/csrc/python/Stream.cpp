#include "python/Stream.h"

#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/utils/pybind.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "runtime/OpenRegException.h"
#include "runtime/OpenRegFunctions.h"
#include "runtime/OpenRegStream.h"

namespace py = pybind11;

namespace openreg_torch {
namespace {

using c10::DeviceIndex;
using c10::openreg::OpenRegStream;

// Python names a stream by the three integers torch.Stream carries.
OpenRegStream unpack(int64_t stream_id, int64_t device_index, int64_t device_type) {
  return OpenRegStream(c10::Stream::unpack3(stream_id, static_cast<DeviceIndex>(device_index),
                                            static_cast<c10::DeviceType>(device_type)));
}

py::tuple pack(const OpenRegStream& stream) {
  const c10::StreamData3 data = stream.unwrap().pack3();
  return py::make_tuple(data.stream_id, data.device_index, static_cast<int64_t>(data.device_type));
}

// DOC START: python-set-stream
// Like torch.cuda.set_stream: the stream's device becomes current too.
void set_stream(int64_t stream_id, int64_t device_index, int64_t device_type) {
  const OpenRegStream stream = unpack(stream_id, device_index, device_type);
  (void)stream.stream();  // rejects ids that name no stream
  if (c10::openreg::current_device() != stream.device_index()) {
    c10::openreg::set_device(stream.device_index());
  }
  c10::openreg::setCurrentOpenRegStream(stream);
}
// DOC END: python-set-stream

double elapsed_time(uintptr_t start, uintptr_t end, DeviceIndex device) {
  return c10::impl::getDeviceGuardImpl(c10::kPrivateUse1)
      ->elapsedTime(reinterpret_cast<void*>(start), reinterpret_cast<void*>(end), device);
}

// DOC START: stream-sleep
// Test helper, like torch.cuda._sleep: the current stream spends `ms` milliseconds on a
// host function, so the work issued after it on that stream is late by as much.
void sleep_on_current_stream(int64_t ms) {
  TORCH_CHECK(ms >= 0, "openreg: _sleep needs a non-negative duration, got ", ms);
  auto sleep = [](void* data) {
    std::this_thread::sleep_for(std::chrono::milliseconds(reinterpret_cast<intptr_t>(data)));
  };
  OPENREG_CHECK(orLaunchHostFunc(c10::openreg::getCurrentOpenRegStream().stream(), sleep,
                                 reinterpret_cast<void*>(static_cast<intptr_t>(ms))));
}
// DOC END: stream-sleep

// DOC START: stream-gate
// Test helper: a host function that holds its stream until open() is called (or the gate
// is destroyed), so a test can prove that work queued behind it has not run yet.
class StreamGate {
 public:
  explicit StreamGate(const OpenRegStream& stream) : state_(std::make_shared<State>()) {
    auto held = std::make_unique<std::shared_ptr<State>>(state_);
    OPENREG_CHECK(orLaunchHostFunc(stream.stream(), &StreamGate::wait, held.get()));
    held.release();  // the host function owns it now
  }
  ~StreamGate() { open(); }
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;

  void open() {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->open = true;
    }
    state_->opened.notify_all();
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable opened;
    bool open = false;
  };

  static void wait(void* data) {
    const std::unique_ptr<std::shared_ptr<State>> held(static_cast<std::shared_ptr<State>*>(data));
    State& state = **held;
    std::unique_lock<std::mutex> lock(state.mutex);
    state.opened.wait(lock, [&] { return state.open; });
  }

  std::shared_ptr<State> state_;
};
// DOC END: stream-gate

} // namespace

void init_stream_bindings(py::module_& m) {
  m.def("_get_current_stream", [](DeviceIndex device) {
    return pack(c10::openreg::getCurrentOpenRegStream(device));
  });
  m.def("_get_default_stream", [](DeviceIndex device) {
    return pack(c10::openreg::getDefaultOpenRegStream(device));
  });
  m.def("_set_stream", &set_stream);
  m.def("_stream_priority", [](int64_t stream_id, int64_t device_index, int64_t device_type) {
    return unpack(stream_id, device_index, device_type).priority();
  });
  m.def("_stream_priority_range", [] {
    int least = 0;
    int greatest = 0;
    c10::openreg::priorityRange(&least, &greatest);
    return py::make_tuple(least, greatest);
  });
  m.def("_event_elapsed_time", &elapsed_time);
  m.def("_sleep", &sleep_on_current_stream);
  py::class_<StreamGate>(m, "_StreamGate")
      .def(py::init([](int64_t stream_id, int64_t device_index, int64_t device_type) {
        return std::make_unique<StreamGate>(unpack(stream_id, device_index, device_type));
      }))
      .def("open", &StreamGate::open);
}

} // namespace openreg_torch
