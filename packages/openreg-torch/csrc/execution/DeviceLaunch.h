#pragma once

// The launch point: every piece of work openreg issues to a device — kernels, copies,
// fills, event records — starts here, and nowhere else calls the runtime's launch or copy primitives.
// That makes it the one place where later features watch device work (profiler
// events, timing): an observer sees each launch before and after it is issued. With
// no observer installed the cost is one relaxed atomic load per launch.
//
// A kernel is a host callable run through orLaunchKernel: it starts only after the
// work already issued on its stream and later work waits for it. Exceptions thrown by
// the kernel propagate to the caller.

#include <c10/core/Device.h>
#include <openreg/openreg.h>

#include <atomic>
#include <cstddef>
#include <exception>
#include <string_view>
#include <utility>

#include "runtime/OpenRegException.h"
#include "runtime/OpenRegMacros.h"
#include "runtime/OpenRegStream.h"

namespace at::native::openreg {

// DOC START: device-work
// One piece of device work, as an observer sees it.
struct DeviceWork {
  enum class Kind { Kernel, Copy, Memset, EventRecord };
  Kind kind;
  std::string_view name;       // the operator, e.g. "aten::add" (kernels), or the copy kind
  c10::DeviceIndex device;
  orStream_t stream;
  c10::StreamId stream_id;     // the stream as PyTorch names it (torch.Stream.stream_id)
  size_t bytes = 0;            // copies and fills
  orMemcpyKind copy_kind = orMemcpyDeviceToDevice;
};

// Watches every launch. before() and after() run on the issuing thread around the
// issue of `work` on `work.stream`; an observer that wants device-side times issues
// work of its own there (e.g. orLaunchHostFunc timestamps), which the stream orders.
class OPENREG_TORCH_API DeviceWorkObserver {
 public:
  virtual ~DeviceWorkObserver() = default;
  virtual void before(const DeviceWork& work) = 0;
  virtual void after(const DeviceWork& work) = 0;
};

// Installs `observer` (nullptr removes it) and returns the previous one. The observer
// must outlive every launch that may still see it.
OPENREG_TORCH_API DeviceWorkObserver* set_device_work_observer(DeviceWorkObserver* observer);
// DOC END: device-work

namespace detail {

OPENREG_TORCH_API extern std::atomic<DeviceWorkObserver*> device_work_observer;

// Tells the installed observer (if any) about `work` for this scope's lifetime.
class ObservedWork {
 public:
  explicit ObservedWork(const DeviceWork& work)
      : observer_(device_work_observer.load(std::memory_order_relaxed)), work_(work) {
    if (C10_UNLIKELY(observer_ != nullptr)) {
      observer_->before(work_);
    }
  }
  ~ObservedWork() {
    if (C10_UNLIKELY(observer_ != nullptr)) {
      observer_->after(work_);
    }
  }
  ObservedWork(const ObservedWork&) = delete;
  ObservedWork& operator=(const ObservedWork&) = delete;

 private:
  DeviceWorkObserver* const observer_;
  const DeviceWork& work_;
};

} // namespace detail

// DOC START: kernel-launch
// Runs `kernel` as a kernel named `name` on `stream`, in stream order.
template <typename Kernel>
void launch_kernel(const c10::openreg::OpenRegStream& stream, std::string_view name,
                   Kernel&& kernel) {
  struct Launch {
    Kernel* kernel;
    orStream_t stream;
    std::exception_ptr error;
  } launch{&kernel, stream.stream(), nullptr};
  auto trampoline = [](void* data) {
    auto* self = static_cast<Launch*>(data);
    try {
      const c10::openreg::RunningKernel running(self->stream);
      (*self->kernel)();
    } catch (...) {
      self->error = std::current_exception();
    }
  };
  const DeviceWork work{DeviceWork::Kind::Kernel, name, stream.device_index(), launch.stream,
                        stream.id()};
  {
    const detail::ObservedWork observed(work);
    OPENREG_CHECK(orLaunchKernel(launch.stream, trampoline, &launch));
  }
  if (launch.error) {
    std::rethrow_exception(launch.error);
  }
}
// DOC END: kernel-launch

// Copies `bytes` from `src` to `dst` on `stream` (orMemcpyAsync: asynchronous when the
// host side is pinned or absent, otherwise returns once the copy is done).
OPENREG_TORCH_API void launch_copy(void* dst, const void* src, size_t bytes, orMemcpyKind kind,
                                   const c10::openreg::OpenRegStream& stream);

// Fills `bytes` of device memory at `device_pointer` with the byte `value` on `stream`.
OPENREG_TORCH_API void launch_memset(void* device_pointer, int value, size_t bytes,
                                     const c10::openreg::OpenRegStream& stream);

// Records `event` on `stream` (orEventRecord), so observers see event records as device
// work too.
OPENREG_TORCH_API void launch_event_record(orEvent_t event,
                                           const c10::openreg::OpenRegStream& stream);

} // namespace at::native::openreg
