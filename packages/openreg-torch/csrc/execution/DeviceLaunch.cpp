#include "execution/DeviceLaunch.h"

#include <ATen/ops/from_blob.h>

#include <cstring>
#include <exception>

#include "execution/KernelView.h"
#include "runtime/OpenRegHostAllocator.h"

namespace at::native::openreg {

namespace detail {
std::atomic<DeviceWorkObserver*> device_work_observer{nullptr};
} // namespace detail

DeviceWorkObserver* set_device_work_observer(DeviceWorkObserver* observer) {
  return detail::device_work_observer.exchange(observer);
}

namespace {

std::string_view copy_name(orMemcpyKind kind) {
  switch (kind) {
    case orMemcpyHostToDevice: return "Memcpy HtoD";
    case orMemcpyDeviceToHost: return "Memcpy DtoH";
    case orMemcpyDeviceToDevice: return "Memcpy DtoD";
    default: return "Memcpy";
  }
}

// DOC START: parallel-copy
// A copy made on the calling thread anyway runs from 256 KiB as a kernel: the CPU's copy_
// of the two byte ranges, split over PyTorch's intra-op threads as a CPU clone is. That is
// a copy the caller waits for (pageable host memory, or device to device, which waits for
// the stream like any kernel), and a copy with pinned host memory the runtime would make
// inline (at most OR_INLINE_ASYNC_BYTES on an idle stream). One thread cannot reach the
// machine's memory bandwidth (64 MiB here: ~10 GB/s on one core, ~14 GB/s on two), and
// after a parallel CPU operator the intra-op threads spin for a few milliseconds on the
// cores a lone copy (or threads of the device's own) would need: a 768 KiB clone right
// after a reduction took three times the CPU's time as one memmove. Below 256 KiB the
// split costs more than it gains. Larger pinned copies, or those queued behind other
// work, stay truly asynchronous (orMemcpyAsync, the stream's worker).
constexpr size_t kParallelCopyBytes = size_t(256) << 10;

bool on_calling_thread(void* dst, const void* src, size_t bytes, orMemcpyKind kind,
                       orStream_t stream) {
  bool pinned = false;
  switch (kind) {
    case orMemcpyHostToDevice: pinned = c10::openreg::isPinnedPointer(src); break;
    case orMemcpyDeviceToHost: pinned = c10::openreg::isPinnedPointer(dst); break;
    case orMemcpyDeviceToDevice: return true;
    default: return false;
  }
  // An idle stream may get work from another thread before the launch: the copy then
  // waits for it (a kernel's launch returns when it has run), still in stream order.
  return !pinned || (bytes <= OR_INLINE_ASYNC_BYTES && OPENREG_QUERY(orStreamQuery(stream)));
}

void parallel_copy(void* dst, const void* src, size_t bytes, orMemcpyKind kind,
                   orStream_t stream) {
  struct Copy {
    char* to;
    const char* from;
    size_t bytes;
    std::exception_ptr error;
  } copy{static_cast<char*>(kind == orMemcpyDeviceToHost ? dst : kernel_pointer(dst)),
         static_cast<const char*>(kind == orMemcpyHostToDevice ? src : kernel_pointer(src)),
         bytes, nullptr};
  auto body = [](void* data) {
    auto* c = static_cast<Copy*>(data);
    if (c->to < c->from + c->bytes && c->from < c->to + c->bytes) {
      std::memmove(c->to, c->from, c->bytes);  // overlapping (one allocation)
      return;
    }
    try {
      // The CPU's copy_ itself (compiled with its OpenMP), over the two byte ranges.
      const auto bytes_at = [c](const void* address) {
        return at::from_blob(const_cast<void*>(address), {static_cast<int64_t>(c->bytes)},
                             at::TensorOptions().dtype(at::kByte));
      };
      bytes_at(c->to).copy_(bytes_at(c->from));
    } catch (...) {
      c->error = std::current_exception();  // not through the runtime's C frames
    }
  };
  OPENREG_CHECK(orLaunchKernel(stream, body, &copy));
  if (copy.error) {
    std::rethrow_exception(copy.error);
  }
}
// DOC END: parallel-copy

} // namespace

// DOC START: copy-launch
void launch_copy(void* dst, const void* src, size_t bytes, orMemcpyKind kind,
                 const c10::openreg::OpenRegStream& stream) {
  const DeviceWork work{DeviceWork::Kind::Copy, copy_name(kind), stream.device_index(),
                        stream.stream(), stream.id(), bytes, kind};
  const detail::ObservedWork observed(work);
  if (bytes >= kParallelCopyBytes && on_calling_thread(dst, src, bytes, kind, work.stream)) {
    parallel_copy(dst, src, bytes, kind, work.stream);
  } else {
    OPENREG_CHECK(orMemcpyAsync(dst, src, bytes, kind, work.stream));
  }
}
// DOC END: copy-launch

void launch_memset(void* device_pointer, int value, size_t bytes,
                   const c10::openreg::OpenRegStream& stream) {
  const DeviceWork work{DeviceWork::Kind::Memset, "Memset", stream.device_index(),
                        stream.stream(), stream.id(), bytes};
  const detail::ObservedWork observed(work);
  OPENREG_CHECK(orMemsetAsync(device_pointer, value, bytes, work.stream));
}

void launch_event_record(orEvent_t event, const c10::openreg::OpenRegStream& stream) {
  const DeviceWork work{DeviceWork::Kind::EventRecord, "Event Record", stream.device_index(),
                        stream.stream(), stream.id()};
  const detail::ObservedWork observed(work);
  OPENREG_CHECK(orEventRecord(event, work.stream));
}

} // namespace at::native::openreg
