#include "runtime/OpenRegStream.h"


#include <c10/core/DeviceGuard.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>

#include "runtime/OpenRegException.h"
#include "runtime/OpenRegFunctions.h"

namespace c10::openreg {
namespace {

// DOC START: stream-pool
// Stream ids: 0 is the default stream; a pool stream's id has its low bit set, then its
// priority level and its index in the pool.
constexpr StreamId kDefaultKind = 0;
constexpr StreamId kPoolKind = 1;
constexpr int kKindBits = 1;
constexpr int kLevelBits = 2;
constexpr int kPoolSize = 32;
constexpr int kMaxPriorityLevels = 4;

struct DeviceStreams {
  std::once_flag created_pool;
  // Set once the pool exists: every launch asks, and std::call_once costs two
  // thread-local accesses and a pthread_once even when it has run.
  std::atomic<bool> pool_ready{false};
  orStream_t default_stream = nullptr;
  std::array<std::array<orStream_t, kPoolSize>, kMaxPriorityLevels> pool{};
  std::array<std::atomic<uint32_t>, kMaxPriorityLevels> next_in_pool{};
};

std::array<DeviceStreams, OR_MAX_DEVICES> device_streams;
// This thread's current stream of each device, made when the thread first sets one:
// until then every device's current stream is its default stream (id 0). Behind a
// pointer so that the library's TLS stays small enough for initial-exec.
using StreamIds = std::array<StreamId, OR_MAX_DEVICES>;
OPENREG_HOT_THREAD_LOCAL StreamIds* current_stream_ids = nullptr;
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
  if (C10_LIKELY(streams.pool_ready.load(std::memory_order_acquire))) {
    return streams;
  }
  std::call_once(streams.created_pool, [&] {
    streams.default_stream = createOnDevice(device, 0);
    for (int level = 0; level < priorityLevels(); ++level) {
      for (auto& handle : streams.pool[level]) {
        handle = createOnDevice(device, -level);
      }
    }
    streams.pool_ready.store(true, std::memory_order_release);
  });
  return streams;
}

StreamId kindOf(StreamId id) { return id & ((1 << kKindBits) - 1); }

// The runtime stream `id` names on `device`, or nullptr if it names none.
orStream_t handleOf(DeviceIndex device, StreamId id) {
  DeviceStreams& streams = streamsOf(device);
  if (id == kDefaultKind) {
    return streams.default_stream;
  }
  const auto level = (id >> kKindBits) & ((1 << kLevelBits) - 1);
  const auto index = id >> (kKindBits + kLevelBits);
  // Ids come back from Python too (torch.Stream(stream_id=...)): reject made-up ones.
  if (id > 0 && kindOf(id) == kPoolKind && level < priorityLevels() && index < kPoolSize) {
    return streams.pool[level][index];
  }
  return nullptr;
}

} // namespace

// `device` is checked by the caller; an id naming no stream throws when it is used.
OpenRegStream makeStream(DeviceIndex device, StreamId id) {
  return OpenRegStream(Stream(Stream::UNSAFE, Device(kPrivateUse1, device), id),
                       handleOf(device, id));
}

OpenRegStream::OpenRegStream(Stream stream) : stream_(stream) {
  TORCH_CHECK(stream_.device_type() == kPrivateUse1,
              "openreg: expected an openreg stream, got a stream on ", stream_.device());
  check_device_index(stream_.device_index());  // it indexes the per-device tables
}

orStream_t OpenRegStream::lookUpHandle() const {
  orStream_t handle = handleOf(device_index(), id());
  TORCH_CHECK(handle != nullptr, "openreg: stream id ", id(), " names no stream of device ",
              static_cast<int>(device_index()));
  return handle;
}

int OpenRegStream::priority() const {
  int priority = 0;
  OPENREG_CHECK(orStreamGetPriority(stream(), &priority));
  return priority;
}

bool OpenRegStream::query() const {
  return OPENREG_QUERY(orStreamQuery(stream()));
}

void OpenRegStream::synchronize() const {
  OPENREG_CHECK(orStreamSynchronize(stream()));
}

bool has_pending_work(orStream_t stream) {
  const orError_t error = orStreamQuery(stream);
  if (error == orErrorForkedProcess) {
    (void)orGetLastError();
    return false;
  }
  return !detail::queryCompleted(error, "orStreamQuery(stream)", __func__, __FILE__, __LINE__);
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
  const StreamIds* ids = current_stream_ids;
  return makeStream(device, ids == nullptr ? kDefaultKind : (*ids)[device]);
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

namespace {

C10_NOINLINE StreamIds& create_current_stream_ids() {
  struct Owner {
    ~Owner() {
      delete current_stream_ids;  // at thread exit; later reads see default streams
      current_stream_ids = nullptr;
    }
  };
  static thread_local Owner owner;
  current_stream_ids = new StreamIds{};
  return *current_stream_ids;
}

} // namespace

void setCurrentOpenRegStream(OpenRegStream stream) {
  StreamIds* ids = current_stream_ids;
  StreamIds& current = C10_LIKELY(ids != nullptr) ? *ids : create_current_stream_ids();
  current[stream.device_index()] = stream.id();
}

namespace {
OPENREG_HOT_THREAD_LOCAL orStream_t running_stream = nullptr;
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
