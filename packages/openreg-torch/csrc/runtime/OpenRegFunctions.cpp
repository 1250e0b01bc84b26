#include "runtime/OpenRegFunctions.h"

#include <array>
#include <atomic>

#include "runtime/OpenRegException.h"

namespace c10::openreg {
namespace {
std::array<std::atomic<bool>, OR_MAX_DEVICES> used_devices{};
} // namespace

// DOC START: SetDevice
orError_t GetDeviceCount(int* count) {
  return orGetDeviceCount(count);
}

orError_t GetDevice(DeviceIndex* device) {
  int index = 0;
  const orError_t error = orGetDevice(&index);
  *device = static_cast<DeviceIndex>(index);
  return error;
}

orError_t SetDevice(DeviceIndex device) {
  // Skip the runtime call when nothing changes: guards call this on every op.
  int current = -1;
  if (orGetDevice(&current) == orSuccess && current == device) {
    return orSuccess;
  }
  return orSetDevice(device);
}
// DOC END: SetDevice

orError_t ExchangeDevice(DeviceIndex to, DeviceIndex* from) {
  const orError_t error = GetDevice(from);
  if (error != orSuccess || *from == to) {
    return error;
  }
  return orSetDevice(to);
}

orError_t MaybeExchangeDevice(DeviceIndex to, DeviceIndex* from) {
  if (to < 0) {
    return GetDevice(from);
  }
  return ExchangeDevice(to, from);
}

// DOC START: device-count
DeviceIndex device_count() noexcept {
  // From the configuration, without starting the runtime (as CUDA counts through
  // NVML): asking is_available() must not stop a later fork() from using the device.
  // Computed once: the runtime reads OPENREG_DEVICE_COUNT once per process.
  static const DeviceIndex count = [] {
    int value = 0;
    return orGetDeviceCountNoInit(&value) == orSuccess ? static_cast<DeviceIndex>(value)
                                                       : DeviceIndex(0);
  }();
  return count;
}

bool in_bad_fork() noexcept {
  int forked = 0;
  return orIsInBadFork(&forked) == orSuccess && forked != 0;
}
// DOC END: device-count

namespace detail {
void throw_invalid_device_index(DeviceIndex device) {
  const DeviceIndex count = device_count();
  TORCH_CHECK(count > 0,
              "openreg: no device available (OPENREG_DEVICE_COUNT is 0)");
  TORCH_CHECK(false, "openreg: invalid device index ", static_cast<int>(device),
              ": there are ", static_cast<int>(count), " openreg devices, valid indices are 0..",
              count - 1);
}
} // namespace detail

DeviceIndex current_device() {
  DeviceIndex device = 0;
  OPENREG_CHECK(GetDevice(&device));
  return device;
}

// DOC START: set_device
void set_device(DeviceIndex device) {
  check_device_index(device);
  OPENREG_CHECK(SetDevice(device));
  mark_device_used(device);
}
// DOC END: set_device

DeviceIndex exchange_device(DeviceIndex device) {
  check_device_index(device);
  DeviceIndex previous = 0;
  OPENREG_CHECK(ExchangeDevice(device, &previous));
  return previous;
}

DeviceIndex maybe_exchange_device(DeviceIndex device) {
  if (device >= 0) {
    check_device_index(device);
  }
  DeviceIndex previous = 0;
  OPENREG_CHECK(MaybeExchangeDevice(device, &previous));
  return previous;
}

bool device_used(DeviceIndex device) noexcept {
  return device >= 0 && device < OR_MAX_DEVICES && used_devices[device].load(std::memory_order_relaxed);
}

void mark_device_used(DeviceIndex device) noexcept {
  used_devices[device].store(true, std::memory_order_relaxed);
}

DeviceIndex device_of_pointer(const void* ptr) noexcept {
  return static_cast<DeviceIndex>(orDeviceOfPointer(ptr));
}

} // namespace c10::openreg
