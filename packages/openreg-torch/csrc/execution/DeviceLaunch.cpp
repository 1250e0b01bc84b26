#include "execution/DeviceLaunch.h"

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

} // namespace

// DOC START: copy-launch
void launch_copy(void* dst, const void* src, size_t bytes, orMemcpyKind kind,
                 const c10::openreg::OpenRegStream& stream) {
  const DeviceWork work{DeviceWork::Kind::Copy, copy_name(kind), stream.device_index(),
                        stream.stream(), stream.id(), bytes, kind};
  const detail::ObservedWork observed(work);
  OPENREG_CHECK(orMemcpyAsync(dst, src, bytes, kind, work.stream));
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
