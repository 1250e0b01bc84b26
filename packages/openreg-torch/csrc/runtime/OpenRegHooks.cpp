#include "runtime/OpenRegHooks.h"

#include <c10/core/DeviceGuard.h>

#include "execution/DeviceLaunch.h"
#include "runtime/OpenRegException.h"
#include "runtime/OpenRegFunctions.h"
#include "runtime/OpenRegGenerator.h"
#include "runtime/OpenRegHostAllocator.h"
#include "runtime/OpenRegDeviceAllocator.h"
#include "runtime/OpenRegStream.h"

namespace c10::openreg {

void OpenRegHooks::init() const {
  // Starting the runtime maps every device's arena; report why if it cannot start.
  int count = 0;
  OPENREG_CHECK(orGetDeviceCount(&count));
}

bool OpenRegHooks::hasPrimaryContext(DeviceIndex device_index) const {
  check_device_index(device_index);
  return device_used(device_index);
}

// DOC START: hooks-generator
const at::Generator& OpenRegHooks::getDefaultGenerator(DeviceIndex device_index) const {
  return getDefaultOpenRegGenerator(device_index);
}
// DOC END: hooks-generator

at::Generator OpenRegHooks::getNewGenerator(DeviceIndex device_index) const {
  return createOpenRegGenerator(device_index);
}

at::Device OpenRegHooks::getDeviceFromPtr(void* data) const {
  const DeviceIndex device = device_of_pointer(data);
  TORCH_CHECK(device >= 0, "openreg: pointer ", data, " is not openreg device memory");
  return {kPrivateUse1, device};
}

c10::Allocator* OpenRegHooks::getPinnedMemoryAllocator() const {
  return getPinnedHostAllocator();
}

bool OpenRegHooks::isPinnedPtr(const void* data) const {
  return isPinnedPointer(data);
}

bool OpenRegHooks::isBuilt() const {
  return true;
}

bool OpenRegHooks::isAvailable() const {
  return device_count() > 0;
}

DeviceIndex OpenRegHooks::deviceCount() const {
  return device_count();
}

void OpenRegHooks::setCurrentDevice(DeviceIndex device) const {
  set_device(device);
}

DeviceIndex OpenRegHooks::getCurrentDevice() const {
  return current_device();
}

DeviceIndex OpenRegHooks::exchangeDevice(DeviceIndex device) const {
  return exchange_device(device);
}

DeviceIndex OpenRegHooks::maybeExchangeDevice(DeviceIndex device) const {
  return maybe_exchange_device(device);
}

void OpenRegHooks::resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_bytes) const {
  TORCH_CHECK(storage.resizable(), "openreg: trying to resize a storage that is not resizable");
  TORCH_CHECK(static_cast<int64_t>(new_bytes) >= 0, "openreg: cannot resize a storage to ",
              static_cast<int64_t>(new_bytes), " bytes; the size must not be negative");
  const DeviceGuard guard(storage.device());
  c10::DataPtr fresh = storage.allocator()->allocate(new_bytes);
  const size_t kept = std::min(storage.nbytes(), new_bytes);
  if (kept > 0) {
    at::native::openreg::launch_copy(fresh.get(), storage.data(), kept, orMemcpyDeviceToDevice,
                                     getCurrentOpenRegStream());
  }
  storage.unsafeGetStorageImpl()->set_data_ptr_noswap(std::move(fresh));
  storage.unsafeGetStorageImpl()->set_nbytes(new_bytes);
}

// DOC START: hooks-register
// Registered when the library loads, before Python can ask anything of the device.
static bool registered_hooks = [] {
  at::RegisterPrivateUse1HooksInterface(new OpenRegHooks());
  return true;
}();
// DOC END: hooks-register

} // namespace c10::openreg
