#include "profiler/OpenRegActivityRecorder.h"

#include <c10/util/Exception.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_set>

#include <sys/syscall.h>
#include <unistd.h>

namespace c10::openreg::profiler {
namespace {

using at::native::openreg::DeviceWork;
using at::native::openreg::DeviceWorkObserver;

int64_t system_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One recorded launch; its two times are written by the stream's worker thread.
struct PendingActivity {
  DeviceActivity activity;
  orStream_t stream = nullptr;
  uint64_t session = 0;  // the recording it belongs to
  std::atomic<int64_t> start_ns{-1};
  std::atomic<int64_t> end_ns{-1};
};

// DOC START: stamp
// Runs on the stream, in stream order: the time the stream reaches this point.
void stamp(void* slot) {
  static_cast<std::atomic<int64_t>*>(slot)->store(system_now_ns(), std::memory_order_release);
}
// DOC END: stamp

void stamp_on(orStream_t stream, std::atomic<int64_t>* slot) {
  if (orLaunchHostFunc(stream, &stamp, slot) != orSuccess) {
    (void)orGetLastError();  // the record stays incomplete and is dropped; never throws
  }
}

// The OS thread id, as PyTorch's profiler names threads in traces.
int32_t os_thread_id() {
  thread_local const auto id = static_cast<int32_t>(::syscall(SYS_gettid));
  return id;
}

thread_local std::vector<uint64_t> correlation_stack;
// The activities this thread is issuing (between before() and after()); nullptr for
// launches seen while not recording.
thread_local std::vector<PendingActivity*> issuing;

class Recorder final : public DeviceWorkObserver {
 public:
  bool start() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (recording_) {
      TORCH_WARN("openreg: a profiler already records openreg device activity");
      return false;
    }
    DeviceWorkObserver* previous = at::native::openreg::set_device_work_observer(this);
    if (previous != nullptr && previous != this) {
      at::native::openreg::set_device_work_observer(previous);
      TORCH_WARN("openreg: another observer of device work is installed; the profiler "
                 "records no openreg device activity");
      return false;
    }
    pending_ = std::make_unique<std::deque<PendingActivity>>();
    ++session_;
    in_flight_ = 0;
    recording_ = true;
    return true;
  }

  void before(const DeviceWork& work) override {
    PendingActivity* pending = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (recording_) {
        pending = &pending_->emplace_back();
        pending->session = session_;
        ++in_flight_;
      }
    }
    if (pending != nullptr) {
      pending->activity = DeviceActivity{
          work.kind, std::string(work.name), work.device, work.stream_id, work.bytes,
          work.copy_kind, correlation_stack.empty() ? 0 : correlation_stack.back(), -1, -1,
          os_thread_id(), system_now_ns(), -1};
      pending->stream = work.stream;
      stamp_on(work.stream, &pending->start_ns);
    }
    issuing.push_back(pending);
  }

  void after(const DeviceWork& work) override {
    if (issuing.empty()) {
      return;
    }
    PendingActivity* pending = issuing.back();
    issuing.pop_back();
    if (pending == nullptr) {
      return;
    }
    stamp_on(work.stream, &pending->end_ns);
    pending->activity.issue_end_ns = system_now_ns();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (pending->session == session_) {  // not a launch a timed-out stop() gave up
        --in_flight_;
      }
    }
    idle_.notify_all();
  }

  std::vector<DeviceActivity> stop() {
    std::unique_ptr<std::deque<PendingActivity>> pending;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!recording_) {
        return {};
      }
      recording_ = false;
      DeviceWorkObserver* self = this;
      at::native::openreg::detail::device_work_observer.compare_exchange_strong(self, nullptr);
      // Launches already past before() finish issuing their end stamps.
      if (!idle_.wait_for(lock, std::chrono::seconds(10), [&] { return in_flight_ == 0; })) {
        TORCH_WARN("openreg: ", in_flight_, " device launches were still being issued when "
                   "the profiler stopped; they are left out");
        (void)pending_.release();  // late stamps may still land there: never freed
        ++session_;                // and their after() no longer counts
        in_flight_ = 0;
        return {};
      }
      pending = std::move(pending_);
    }
    std::unordered_set<orStream_t> streams;
    for (const auto& item : *pending) {
      streams.insert(item.stream);
    }
    for (orStream_t stream : streams) {
      if (orStreamSynchronize(stream) != orSuccess) {
        (void)orGetLastError();  // a failed stream's records stay incomplete
      }
    }
    std::vector<DeviceActivity> done;
    done.reserve(pending->size());
    for (auto& item : *pending) {
      const int64_t start = item.start_ns.load(std::memory_order_acquire);
      const int64_t end = item.end_ns.load(std::memory_order_acquire);
      if (start >= 0 && end >= start) {
        done.push_back(std::move(item.activity));
        done.back().start_ns = start;
        done.back().end_ns = end;
      }
    }
    return done;
  }

 private:
  std::mutex mutex_;
  std::condition_variable idle_;
  bool recording_ = false;
  uint64_t session_ = 0;
  size_t in_flight_ = 0;
  std::unique_ptr<std::deque<PendingActivity>> pending_;  // deque: stable addresses
};

Recorder& recorder() {
  static auto* instance = new Recorder();  // never destroyed: launches may outlive exit
  return *instance;
}

} // namespace

void push_correlation_id(uint64_t id) {
  correlation_stack.push_back(id);
}

void pop_correlation_id() {
  if (!correlation_stack.empty()) {
    correlation_stack.pop_back();
  }
}

bool start_device_activity() {
  return recorder().start();
}

std::vector<DeviceActivity> stop_device_activity() {
  return recorder().stop();
}

} // namespace c10::openreg::profiler
