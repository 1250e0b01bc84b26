#include "runtime/OpenRegGuardImpl.h"

#include <c10/core/DeviceGuard.h>

#include "runtime/OpenRegDeviceAllocator.h"
#include "runtime/OpenRegEvent.h"
#include "runtime/OpenRegException.h"
#include "runtime/OpenRegFunctions.h"
#include "runtime/OpenRegStream.h"

namespace c10::openreg {

OpenRegGuardImpl::OpenRegGuardImpl(DeviceType type) {
  TORCH_CHECK(type == static_type, "openreg: OpenRegGuardImpl built for ", type);
}

DeviceType OpenRegGuardImpl::type() const {
  return static_type;
}

// DOC START: guard-exchange
Device OpenRegGuardImpl::exchangeDevice(Device device) const {
  TORCH_CHECK(device.is_privateuseone(), "openreg: expected an openreg device, got ", device);
  const DeviceIndex previous = exchange_device(device.index());
  return Device(static_type, previous);
}
// DOC END: guard-exchange

Device OpenRegGuardImpl::getDevice() const {
  return Device(static_type, current_device());
}

void OpenRegGuardImpl::setDevice(Device device) const {
  TORCH_CHECK(device.is_privateuseone(), "openreg: expected an openreg device, got ", device);
  set_device(device.index());
}

void OpenRegGuardImpl::uncheckedSetDevice(Device device) const noexcept {
  // Used by guard destructors, which must not throw; the index was valid when saved.
  (void)SetDevice(device.index());
}

DeviceIndex OpenRegGuardImpl::deviceCount() const noexcept {
  return device_count();
}

Stream OpenRegGuardImpl::getStream(Device device) const {
  return getCurrentOpenRegStream(device.index()).unwrap();
}

Stream OpenRegGuardImpl::getDefaultStream(Device device) const {
  return getDefaultOpenRegStream(device.index()).unwrap();
}

Stream OpenRegGuardImpl::getStreamFromGlobalPool(Device device, bool isHighPriority) const {
  int least = 0;
  int greatest = 0;
  priorityRange(&least, &greatest);
  return getStreamFromPool(isHighPriority ? greatest : least, device.index()).unwrap();
}

// DOC START: guard-new-stream
// torch.Stream() and torch.openreg.Stream() come here. As CUDA does, they take the next
// stream of the device's pool rather than creating one: programs make streams in loops.
Stream OpenRegGuardImpl::getNewStream(Device device, int priority) const {
  return getStreamFromPool(priority, device.index()).unwrap();
}
// DOC END: guard-new-stream

Stream OpenRegGuardImpl::exchangeStream(Stream stream) const {
  const OpenRegStream next(stream);
  const OpenRegStream previous = getCurrentOpenRegStream(next.device_index());
  setCurrentOpenRegStream(next);
  return previous.unwrap();
}

void* OpenRegGuardImpl::getStreamNativeHandle(const Stream stream) const {
  return OpenRegStream(stream).stream();
}

bool OpenRegGuardImpl::queryStream(const Stream& stream) const {
  return OpenRegStream(stream).query();
}

void OpenRegGuardImpl::synchronizeStream(const Stream& stream) const {
  OpenRegStream(stream).synchronize();
}

void OpenRegGuardImpl::synchronizeDevice(const DeviceIndex device_index) const {
  const DeviceGuard guard(Device(static_type, device_index));
  OPENREG_CHECK(orDeviceSynchronize());
}

// DOC START: guard-events
// c10::Event owns its runtime event as a raw void* handle: the guard creates it in
// record() and c10::Event gives it back through destroyEvent(). So the RAII type owns a
// guard event only at both ends: record() creates it as an OpenRegEvent and releases it
// to c10::Event (if recording throws, the OpenRegEvent destroys it), and destroyEvent()
// adopts it back so that OpenRegEvent's destructor destroys it. In between, the handle
// carries no device (block, queryEvent, synchronizeEvent) and no flags, so every other
// call borrows it as an OpenRegEvent for that call only and never destroys it.
namespace {

class BorrowedEvent {
 public:
  BorrowedEvent(void* event, DeviceIndex device)
      : event_(OpenRegEvent::adopt(static_cast<orEvent_t>(event), device)) {}
  ~BorrowedEvent() { (void)event_.release(); }
  BorrowedEvent(const BorrowedEvent&) = delete;
  BorrowedEvent& operator=(const BorrowedEvent&) = delete;

  OpenRegEvent* operator->() { return &event_; }
  const OpenRegEvent& operator*() const { return event_; }

 private:
  OpenRegEvent event_;
};

} // namespace

void OpenRegGuardImpl::destroyEvent(void* event, const DeviceIndex device_index) const noexcept {
  const OpenRegEvent owned = OpenRegEvent::adopt(static_cast<orEvent_t>(event), device_index);
}  // destroyed here

void OpenRegGuardImpl::record(void** event, const Stream& stream,
                              const DeviceIndex device_index, const EventFlag flag) const {
  TORCH_CHECK(device_index == -1 || device_index == stream.device_index(),
              "openreg: event device index ", static_cast<int>(device_index),
              " does not match the recording stream's device ",
              static_cast<int>(stream.device_index()));
  const OpenRegStream openreg_stream(stream);
  if (*event != nullptr) {
    BorrowedEvent(*event, device_index)->record(openreg_stream);
    return;
  }
  // PyTorch's default events skip timing, as CUDA's do; BACKEND_DEFAULT keeps it.
  OpenRegEvent created(flag == EventFlag::BACKEND_DEFAULT ? orEventDefault
                                                          : orEventDisableTiming);
  created.record(openreg_stream);
  *event = created.release();
}
// DOC END: guard-events

void OpenRegGuardImpl::block(void* event, const Stream& stream) const {
  BorrowedEvent(event, -1)->block(OpenRegStream(stream));
}

bool OpenRegGuardImpl::queryEvent(void* event) const {
  return BorrowedEvent(event, -1)->query();
}

void OpenRegGuardImpl::synchronizeEvent(void* event) const {
  BorrowedEvent(event, -1)->synchronize();
}

double OpenRegGuardImpl::elapsedTime(void* start, void* end, const DeviceIndex device_index) const {
  const BorrowedEvent end_event(end, device_index);
  return BorrowedEvent(start, device_index)->elapsed_time(*end_event);
}

void OpenRegGuardImpl::recordDataPtrOnStream(const DataPtr& data_ptr, const Stream& stream) const {
  getDeviceAllocator().recordStream(data_ptr, stream);
}

// DOC START: guard-capability
DeviceCapability OpenRegGuardImpl::getDeviceCapability(Device device) const {
  check_device_index(device.index());
  // openreg runs the CPU's kernels on device memory, so it stores and converts what
  // the CPU does: every dtype except the quantized ones (no openreg quantizer) and those
  // the CPU cannot convert either (bit containers, sub-byte integers, Float4_e2m1fn_x2).
  DeviceCapability capability;
  capability.capability_data.capability_bits = 0;
  for (const ScalarType type :
       {kByte, kChar, kShort, kInt, kLong, kHalf, kFloat, kDouble, kComplexHalf, kComplexFloat,
        kComplexDouble, kBool, kBFloat16, kFloat8_e5m2, kFloat8_e4m3fn, kFloat8_e5m2fnuz,
        kFloat8_e4m3fnuz, kFloat8_e8m0fnu, kUInt16, kUInt32, kUInt64}) {
    capability.capability_data.capability_bits |= uint64_t(1) << static_cast<int>(type);
  }
  return capability;
}
// DOC END: guard-capability

C10_REGISTER_GUARD_IMPL(PrivateUse1, OpenRegGuardImpl);

} // namespace c10::openreg
