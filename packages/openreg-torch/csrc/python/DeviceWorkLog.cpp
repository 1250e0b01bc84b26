#include "python/DeviceWorkLog.h"

#include <torch/csrc/utils/pybind.h>

#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "execution/DeviceLaunch.h"

namespace openreg_torch {
namespace {

namespace py = pybind11;
using at::native::openreg::DeviceWork;

const char* kind_name(DeviceWork::Kind kind) {
  switch (kind) {
    case DeviceWork::Kind::Kernel: return "kernel";
    case DeviceWork::Kind::Copy: return "copy";
    case DeviceWork::Kind::Memset: return "memset";
    case DeviceWork::Kind::EventRecord: return "event_record";
  }
  return "unknown";
}

// (kind, name, device, bytes) of every launch while installed, from any thread.
class DeviceWorkLog final : public at::native::openreg::DeviceWorkObserver {
 public:
  using Entry = std::tuple<std::string, std::string, int, size_t>;

  void before(const DeviceWork& work) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    entries_.emplace_back(kind_name(work.kind), std::string(work.name), work.device, work.bytes);
  }
  void after(const DeviceWork& /*work*/) override {}

  std::vector<Entry> take() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return std::move(entries_);
  }

 private:
  std::mutex mutex_;
  std::vector<Entry> entries_;
};

DeviceWorkLog& log() {
  static auto* instance = new DeviceWorkLog();  // never destroyed: launches may outlive exit
  return *instance;
}

} // namespace

void init_device_work_log_bindings(py::module_& m) {
  m.def("_start_device_work_log", [] {
    log().take();
    auto* previous = at::native::openreg::set_device_work_observer(&log());
    TORCH_CHECK(previous == nullptr || previous == &log(),
                "openreg: another observer of device work is installed");
  });
  // Stops recording and returns what was recorded.
  m.def("_stop_device_work_log", [] {
    at::native::openreg::set_device_work_observer(nullptr);
    return log().take();
  });
}

} // namespace openreg_torch
