#include "runtime/OpenRegGuardImpl.h"

#include <c10/core/DeviceGuard.h>

#include "runtime/OpenRegDeviceAllocator.h"
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

void OpenRegGuardImpl::destroyEvent(void* event, const DeviceIndex device_index) const noexcept {
  if (event != nullptr) {
    (void)orEventDestroy(static_cast<orEvent_t>(event));
  }
}

// DOC START: guard-record
void OpenRegGuardImpl::record(void** event, const Stream& stream,
                              const DeviceIndex device_index, const EventFlag flag) const {
  TORCH_CHECK(device_index == -1 || device_index == stream.device_index(),
              "openreg: event device index ", static_cast<int>(device_index),
              " does not match the recording stream's device ",
              static_cast<int>(stream.device_index()));
  const DeviceGuard guard(stream.device());
  if (*event == nullptr) {
    // PyTorch's default events skip timing, as CUDA's do; BACKEND_DEFAULT keeps it.
    const unsigned flags =
        flag == EventFlag::BACKEND_DEFAULT ? orEventDefault : orEventDisableTiming;
    orEvent_t created = nullptr;
    OPENREG_CHECK(orEventCreateWithFlags(&created, flags));
    *event = created;
  }
  OPENREG_CHECK(orEventRecord(static_cast<orEvent_t>(*event), OpenRegStream(stream).stream()));
}
// DOC END: guard-record

void OpenRegGuardImpl::block(void* event, const Stream& stream) const {
  if (event == nullptr) {
    return;  // never recorded: nothing to wait for
  }
  const DeviceGuard guard(stream.device());
  OPENREG_CHECK(orStreamWaitEvent(OpenRegStream(stream).stream(),
                                  static_cast<orEvent_t>(event), 0));
}

bool OpenRegGuardImpl::queryEvent(void* event) const {
  if (event == nullptr) {
    return true;
  }
  const orError_t error = orEventQuery(static_cast<orEvent_t>(event));
  if (error == orErrorNotReady) {
    return false;
  }
  OPENREG_CHECK(error);
  return true;
}

void OpenRegGuardImpl::synchronizeEvent(void* event) const {
  if (event != nullptr) {
    OPENREG_CHECK(orEventSynchronize(static_cast<orEvent_t>(event)));
  }
}

double OpenRegGuardImpl::elapsedTime(void* start, void* end, const DeviceIndex device_index) const {
  TORCH_CHECK(start != nullptr && end != nullptr,
              "openreg: both events must be recorded before measuring elapsed time");
  float milliseconds = 0;
  OPENREG_CHECK(orEventElapsedTime(&milliseconds, static_cast<orEvent_t>(start),
                                   static_cast<orEvent_t>(end)));
  return milliseconds;
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
