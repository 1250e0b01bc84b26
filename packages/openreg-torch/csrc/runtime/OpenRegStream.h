#pragma once

// Streams of the openreg backend, after c10/cuda/CUDAStream.h: a c10::Stream whose id
// names either the device's default stream or one of a per-device pool of streams per
// priority. Each thread has a current stream per device.

#include <c10/core/Stream.h>
#include <openreg/openreg.h>

#include <functional>

#include "runtime/OpenRegMacros.h"

namespace c10::openreg {

// DOC START: stream-class
class OPENREG_TORCH_API OpenRegStream {
 public:
  explicit OpenRegStream(Stream stream);

  Device device() const { return stream_.device(); }
  DeviceIndex device_index() const { return stream_.device_index(); }
  StreamId id() const { return stream_.id(); }
  Stream unwrap() const { return stream_; }
  operator Stream() const { return stream_; }
  bool operator==(const OpenRegStream& other) const { return stream_ == other.stream_; }
  bool operator!=(const OpenRegStream& other) const { return stream_ != other.stream_; }

  // The runtime handle (every stream, the default one included, is a created runtime
  // stream, so it names its device by itself).
  orStream_t stream() const {
    return C10_LIKELY(handle_ != nullptr) ? handle_ : lookUpHandle();
  }
  int priority() const;
  bool query() const;
  void synchronize() const;

 private:
  friend OpenRegStream makeStream(DeviceIndex device, StreamId id);
  OpenRegStream(Stream stream, orStream_t handle) : stream_(stream), handle_(handle) {}
  orStream_t lookUpHandle() const;

  Stream stream_;
  // Known when this library made the stream (current, default, pool): launches and
  // allocations, which all ask for it, then skip the lookup in the device's table.
  orStream_t handle_ = nullptr;
};
// DOC END: stream-class

OPENREG_TORCH_API OpenRegStream getDefaultOpenRegStream(DeviceIndex device = -1);
OPENREG_TORCH_API OpenRegStream getCurrentOpenRegStream(DeviceIndex device = -1);
// Round-robin over the device's pool for the given priority (0 is the lowest; pass a
// negative value for a higher priority, as with CUDA).
OPENREG_TORCH_API OpenRegStream getStreamFromPool(int priority = 0, DeviceIndex device = -1);
// Makes `stream` current for its device on this thread; returns nothing, like CUDA.
OPENREG_TORCH_API void setCurrentOpenRegStream(OpenRegStream stream);
OPENREG_TORCH_API void priorityRange(int* least, int* greatest);

// Whether work issued on `stream` is still pending, for the allocators' frees: those run
// in destructors, which must not throw. In a child forked after the runtime started, the
// parent's streams are out of reach and nothing runs on them, so they are idle there;
// any other error throws as OPENREG_QUERY does.
OPENREG_TORCH_API bool has_pending_work(orStream_t stream);

// The stream whose kernel this thread is running (nullptr outside kernels). Memory a
// kernel frees on its own stream may be reused by it at once (see the allocator).
OPENREG_TORCH_API orStream_t running_kernel_stream();

// Marks this thread as running a kernel of `stream` for the guard's lifetime (set by
// the launch point, execution/DeviceLaunch.h).
class OPENREG_TORCH_API RunningKernel {
 public:
  explicit RunningKernel(orStream_t stream);
  ~RunningKernel();
  RunningKernel(const RunningKernel&) = delete;
  RunningKernel& operator=(const RunningKernel&) = delete;

 private:
  orStream_t previous_;
};

} // namespace c10::openreg

// Streams key hash sets (the pinned host cache records which streams used a block).
template <>
struct std::hash<c10::openreg::OpenRegStream> {
  size_t operator()(const c10::openreg::OpenRegStream& stream) const noexcept {
    return std::hash<c10::Stream>()(stream.unwrap());
  }
};
