#include "runtime/OpenRegStream.h"


#include <c10/core/DeviceGuard.h>

#include <array>
#include <atomic>
#include <mutex>

#include "runtime/OpenRegException.h"
#include "runtime/OpenRegFunctions.h"

namespace c10::openreg {
namespace {

// DOC START: stream-pool
// Stream ids: the low two bits say which kind of stream the id names.
constexpr StreamId kDefaultKind = 0;
constexpr StreamId kPoolKind = 1;
constexpr StreamId kCreatedKind = 2;
constexpr int kKindBits = 2;
constexpr int kLevelBits = 2;
constexpr int kPoolSize = 32;
constexpr int kMaxPriorityLevels = 4;
constexpr int kMaxCreatedStreams = 4096;
constexpr int kMaxDevices = 64;

struct DeviceStreams {
  std::once_flag created_pool;
  orStream_t default_stream = nullptr;
  std::array<std::array<orStream_t, kPoolSize>, kMaxPriorityLevels> pool{};
  std::array<std::atomic<uint32_t>, kMaxPriorityLevels> next_in_pool{};
  std::mutex created_mutex;
  std::array<std::atomic<orStream_t>, kMaxCreatedStreams> created{};
  std::atomic<int> created_count{0};
};

std::array<DeviceStreams, kMaxDevices> device_streams;
thread_local std::array<StreamId, kMaxDevices> current_stream_ids{};
// DOC END: stream-pool

int priorityLevels() {
  int least = 0;
  int greatest = 0;
  priorityRange(&least, &greatest);
  return std::min(least - greatest + 1, kMaxPriorityLevels);
}

// Priority 0 is level 0; each step towards the greatest priority is one level up.
int levelOf(int priority) {
  return std::clamp(-priority, 0, priorityLevels() - 1);
}

DeviceIndex resolve(DeviceIndex device) {
  if (device < 0) {
    return current_device();
  }
  check_device_index(device);
  return device;
}

// Creating streams needs the device current: the runtime puts them there.
orStream_t createOnDevice(DeviceIndex device, int priority) {
  const c10::DeviceGuard guard(Device(kPrivateUse1, device));
  orStream_t handle = nullptr;
  OPENREG_CHECK(orStreamCreateWithPriority(&handle, 0, priority));
  return handle;
}

DeviceStreams& streamsOf(DeviceIndex device) {
  DeviceStreams& streams = device_streams[device];
  std::call_once(streams.created_pool, [&] {
    streams.default_stream = createOnDevice(device, 0);
    for (int level = 0; level < priorityLevels(); ++level) {
      for (auto& handle : streams.pool[level]) {
        handle = createOnDevice(device, -level);
      }
    }
  });
  return streams;
}

OpenRegStream makeStream(DeviceIndex device, StreamId id) {
  return OpenRegStream(Stream(Stream::UNSAFE, Device(kPrivateUse1, device), id));
}

StreamId kindOf(StreamId id) { return id & ((1 << kKindBits) - 1); }

OpenRegStream registerCreated(DeviceIndex device, orStream_t handle) {
  DeviceStreams& streams = streamsOf(device);
  std::lock_guard<std::mutex> lock(streams.created_mutex);
  const int index = streams.created_count.load();
  TORCH_CHECK(index < kMaxCreatedStreams, "openreg: more than ", kMaxCreatedStreams,
              " external streams were registered on device ", static_cast<int>(device));
  streams.created[index].store(handle);
  streams.created_count.store(index + 1);
  return makeStream(device, kCreatedKind | (static_cast<StreamId>(index) << kKindBits));
}

} // namespace

OpenRegStream::OpenRegStream(Stream stream) : stream_(stream) {
  TORCH_CHECK(stream_.device_type() == kPrivateUse1,
              "openreg: expected an openreg stream, got a stream on ", stream_.device());
}

orStream_t OpenRegStream::stream() const {
  DeviceStreams& streams = streamsOf(device_index());
  const StreamId id = stream_.id();
  switch (kindOf(id)) {
    case kDefaultKind:
      return streams.default_stream;
    case kPoolKind: {
      const auto level = (id >> kKindBits) & ((1 << kLevelBits) - 1);
      const auto index = id >> (kKindBits + kLevelBits);
      return streams.pool.at(level).at(index);
    }
    default: {
      const auto index = id >> kKindBits;
      TORCH_CHECK(index < streams.created_count.load(), "openreg: unknown stream id ", id);
      return streams.created[index].load();
    }
  }
}

int OpenRegStream::priority() const {
  int priority = 0;
  OPENREG_CHECK(orStreamGetPriority(stream(), &priority));
  return priority;
}

bool OpenRegStream::query() const {
  const orError_t error = orStreamQuery(stream());
  if (error == orErrorNotReady) {
    return false;
  }
  OPENREG_CHECK(error);
  return true;
}

void OpenRegStream::synchronize() const {
  OPENREG_CHECK(orStreamSynchronize(stream()));
}

void priorityRange(int* least, int* greatest) {
  static const std::pair<int, int> range = [] {
    int low = 0;
    int high = 0;
    OPENREG_CHECK(orDeviceGetStreamPriorityRange(&low, &high));
    return std::make_pair(low, high);
  }();
  *least = range.first;
  *greatest = range.second;
}

OpenRegStream getDefaultOpenRegStream(DeviceIndex device) {
  return makeStream(resolve(device), kDefaultKind);
}

OpenRegStream getCurrentOpenRegStream(DeviceIndex device) {
  device = resolve(device);
  return makeStream(device, current_stream_ids[device]);
}

// DOC START: get-stream-from-pool
OpenRegStream getStreamFromPool(int priority, DeviceIndex device) {
  device = resolve(device);
  DeviceStreams& streams = streamsOf(device);
  const int level = levelOf(priority);
  const uint32_t index = streams.next_in_pool[level]++ % kPoolSize;
  return makeStream(device, kPoolKind | (static_cast<StreamId>(level) << kKindBits) |
                                (static_cast<StreamId>(index) << (kKindBits + kLevelBits)));
}
// DOC END: get-stream-from-pool

OpenRegStream getStreamFromExternal(orStream_t handle, DeviceIndex device) {
  device = resolve(device);
  DeviceStreams& streams = streamsOf(device);
  if (handle == streams.default_stream) {
    return makeStream(device, kDefaultKind);
  }
  const int count = streams.created_count.load();
  for (int index = 0; index < count; ++index) {
    if (streams.created[index].load() == handle) {
      return makeStream(device, kCreatedKind | (static_cast<StreamId>(index) << kKindBits));
    }
  }
  return registerCreated(device, handle);
}

void setCurrentOpenRegStream(OpenRegStream stream) {
  current_stream_ids[stream.device_index()] = stream.id();
}

std::ostream& operator<<(std::ostream& out, const OpenRegStream& stream) {
  return out << stream.unwrap();
}

namespace {
thread_local orStream_t running_stream = nullptr;
} // namespace

orStream_t running_kernel_stream() {
  return running_stream;
}

RunningKernel::RunningKernel(orStream_t stream) : previous_(running_stream) {
  running_stream = stream;
}

RunningKernel::~RunningKernel() {
  running_stream = previous_;
}

} // namespace c10::openreg
