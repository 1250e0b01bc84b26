#ifdef USE_KINETO

// Kineto's trace activities format their metadata with fmt, whose compiled part libtorch
// keeps private (fmt::vformat is not exported): this file, the only one including
// Kineto's headers, uses fmt header-only.
#define FMT_HEADER_ONLY

#include "profiler/OpenRegActivityProfiler.h"

#include <libkineto.h>
#include <output_base.h>
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "profiler/OpenRegActivityRecorder.h"

namespace c10::openreg::profiler {
namespace {

using at::native::openreg::DeviceWork;
using libkineto::ActivityType;

// Chrome traces sort processes by this index: openreg devices after the CPU process.
constexpr int64_t kDeviceSortBase = 5000000;

// DOC START: activity-types
// The Kineto activity type of each kind of device work (PyTorch maps these types to
// DeviceType::PrivateUse1 when a PrivateUse1 backend is registered). An event record
// is a zero-length device-side marker.
ActivityType activity_type(DeviceWork::Kind kind) {
  switch (kind) {
    case DeviceWork::Kind::Kernel: return ActivityType::CONCURRENT_KERNEL;
    case DeviceWork::Kind::Copy: return ActivityType::GPU_MEMCPY;
    case DeviceWork::Kind::Memset: return ActivityType::GPU_MEMSET;
    case DeviceWork::Kind::EventRecord: return ActivityType::GPU_USER_ANNOTATION;
  }
  return ActivityType::CONCURRENT_KERNEL;
}
// DOC END: activity-types

// The runtime call that issued each kind of work, as CUDA traces show cudaLaunchKernel.
const char* runtime_call(DeviceWork::Kind kind) {
  switch (kind) {
    case DeviceWork::Kind::Kernel: return "orLaunchKernel";
    case DeviceWork::Kind::Copy: return "orMemcpyAsync";
    case DeviceWork::Kind::Memset: return "orMemsetAsync";
    case DeviceWork::Kind::EventRecord: return "orEventRecord";
  }
  return "orLaunchKernel";
}

// What ProfilerActivity.PrivateUse1 adds to PyTorch's selection (and CPU activities alone
// never select).
bool is_device_work_type(ActivityType type) {
  return type == ActivityType::CONCURRENT_KERNEL || type == ActivityType::GPU_MEMCPY ||
         type == ActivityType::GPU_MEMSET;
}

const char* copy_direction(orMemcpyKind kind) {
  switch (kind) {
    case orMemcpyHostToDevice: return "HtoD";
    case orMemcpyDeviceToHost: return "DtoH";
    case orMemcpyDeviceToDevice: return "DtoD";
    default: return "HtoH";
  }
}

std::string stream_name(StreamId id) {
  return id == 0 ? "stream 0 (default)" : "stream " + std::to_string(id);
}

class OpenRegActivitySession final : public libkineto::IActivityProfilerSession {
 public:
  explicit OpenRegActivitySession(std::set<ActivityType> selected)
      : selected_(std::move(selected)), buffer_(std::make_unique<libkineto::CpuTraceBuffer>()) {
    buffer_->span = libkineto::TraceSpan(0, 0, "openreg");
    buffer_->gpuOpCount = -1;
  }

  void start() override {
    recording_ = start_device_activity();
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    if (recording_) {
      recorded_ = stop_device_activity();
      recording_ = false;
    }
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  // Called on the thread running each CPU operator, around it.
  void pushCorrelationId(uint64_t id) override {
    push_correlation_id(id);
  }
  void popCorrelationId() override {
    pop_correlation_id();
  }

  std::vector<std::string> errors() override {
    return {};
  }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, [](int32_t) -> const libkineto::ITraceActivity* { return nullptr; }, 0,
                 0);
  }

  void processTrace(libkineto::ActivityLogger& logger,
                    libkineto::getLinkedActivityCallback linked_activity, int64_t start_time,
                    int64_t end_time) override {
    const bool runtime_selected = selected_.count(ActivityType::PRIVATEUSE1_RUNTIME) > 0;
    uint32_t flow_id = 0;
    for (const DeviceActivity& recorded : recorded_) {
      const ActivityType type = activity_type(recorded.kind);
      if (!selected_.count(type)) {
        continue;
      }
      const libkineto::ITraceActivity* linked = recorded.correlation_id != 0
          ? linked_activity(static_cast<int32_t>(recorded.correlation_id))
          : nullptr;
      const auto correlation = static_cast<int32_t>(recorded.correlation_id);
      ++flow_id;
      // The issue on the host: a runtime activity on the issuing thread, the start of
      // the trace's arrow to the device activity.
      if (runtime_selected) {
        auto& issue = add(ActivityType::PRIVATEUSE1_RUNTIME, runtime_call(recorded.kind));
        issue.startTime = recorded.issue_start_ns;
        issue.endTime = recorded.issue_end_ns;
        issue.device = process_id_;
        issue.resource = recorded.issuing_thread;
        issue.threadId = recorded.issuing_thread;
        issue.id = correlation;
        issue.linked = linked;
        issue.flow.id = flow_id;
        issue.flow.type = libkineto::kLinkAsyncCpuGpu;
        issue.flow.start = 1;
        logger.handleActivity(issue);
      }
      auto& activity = add(type, recorded.name);
      activity.startTime = recorded.start_ns;
      activity.endTime = recorded.end_ns;
      activity.device = recorded.device;           // one trace process per device...
      activity.resource = static_cast<int32_t>(recorded.stream_id);  // ...one lane per stream
      activity.id = correlation;
      activity.linked = linked;
      if (runtime_selected) {
        activity.flow.id = flow_id;
        activity.flow.type = libkineto::kLinkAsyncCpuGpu;
        activity.flow.start = 0;
      }
      activity.addMetadata("device", static_cast<int>(recorded.device));
      activity.addMetadata("stream", recorded.stream_id);
      activity.addMetadata("correlation", recorded.correlation_id);
      if (recorded.kind == DeviceWork::Kind::Copy || recorded.kind == DeviceWork::Kind::Memset) {
        activity.addMetadata("bytes", recorded.bytes);
      }
      if (recorded.kind == DeviceWork::Kind::Copy) {
        activity.addMetadataQuoted("kind", copy_direction(recorded.copy_kind));
      }
      streams_[recorded.device].insert(recorded.stream_id);
      logger.handleActivity(activity);
    }
  }

  // Kineto asks for one device per session: the first device that ran work (other
  // devices' lanes are still named by getResourceInfos).
  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    if (streams_.empty()) {
      return nullptr;
    }
    const DeviceIndex device = streams_.begin()->first;
    return std::make_unique<libkineto::DeviceInfo>(libkineto::DeviceInfo{
        device, kDeviceSortBase + device, "openreg " + std::to_string(device),
        "openreg:" + std::to_string(device)});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::vector<libkineto::ResourceInfo> lanes;
    for (const auto& [device, ids] : streams_) {
      for (StreamId id : ids) {
        lanes.push_back(libkineto::ResourceInfo{id, id, device, stream_name(id)});
      }
    }
    return lanes;
  }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override {
    return std::move(buffer_);
  }

 private:
  libkineto::GenericTraceActivity& add(ActivityType type, const std::string& name) {
    buffer_->emplace_activity(buffer_->span, type, name);
    return *buffer_->activities.back();
  }

  const std::set<ActivityType> selected_;
  const int32_t process_id_ = static_cast<int32_t>(libkineto::processId());
  bool recording_ = false;
  std::vector<DeviceActivity> recorded_;
  // Owns the activities handed to the logger (Kineto keeps it once the trace is done).
  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_;
  std::map<DeviceIndex, std::set<StreamId>> streams_;
};

class OpenRegActivityProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override {
    return name_;
  }

  const std::set<ActivityType>& availableActivities() const override {
    return activities_;
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      const std::set<ActivityType>& activity_types, const libkineto::Config& config) override {
    std::set<ActivityType> selected;
    for (ActivityType type : activity_types) {
      if (activities_.count(type)) {
        selected.insert(type);
      }
    }
    // Only CPU activities asked for (no ProfilerActivity.PrivateUse1; PyTorch's CPU set
    // holds PRIVATEUSE1_RUNTIME too): no session, and openreg's launches stay unobserved.
    if (std::none_of(selected.begin(), selected.end(), is_device_work_type)) {
      return nullptr;
    }
    return std::make_unique<OpenRegActivitySession>(std::move(selected));
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      int64_t /*ts_ms*/, int64_t /*duration_ms*/, const std::set<ActivityType>& activity_types,
      const libkineto::Config& config) override {
    return configure(activity_types, config);
  }

 private:
  const std::string name_ = "openreg";
  const std::set<ActivityType> activities_{
      ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY, ActivityType::GPU_MEMSET,
      ActivityType::GPU_USER_ANNOTATION, ActivityType::PRIVATEUSE1_RUNTIME};
};

} // namespace

void register_activity_profiler() {
  torch::profiler::impl::PrivateUse1ProfilerRegistry::instance().registerFactory(
      []() -> std::unique_ptr<libkineto::IActivityProfiler> {
        return std::make_unique<OpenRegActivityProfiler>();
      });
}

} // namespace c10::openreg::profiler

#endif // USE_KINETO
