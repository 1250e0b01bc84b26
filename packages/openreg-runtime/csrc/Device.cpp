// Device management calls (cudaGetDeviceCount, cudaSetDevice, ...).
#include "Device.h"


#include <cstring>
#include <thread>

#include "Errors.h"
#include "Ipc.h"
#include "Runtime.h"
#include "Stream.h"

namespace openreg {
namespace {

// Leaked on purpose: worker threads may outlive static destruction.
Device* g_devices[OR_MAX_DEVICES];

}  // namespace

void createDevices(const EnvConfig& config) {
  for (int i = 0; i < config.deviceCount; ++i) {
    g_devices[i] = new Device;
    g_devices[i]->index = i;
    g_devices[i]->allocator.init(i, config.deviceMemory);
  }
}

Device& device(int index) { return *g_devices[index]; }

bool findAllocation(int d, uintptr_t p, Allocation* out) {
  if (device(d).allocator.find(p, out)) return true;
  int importedDevice = -1;
  return findImported(p, &importedDevice, out);
}

}  // namespace openreg

using namespace openreg;

extern "C" {

OR_API orError_t orGetDeviceCount(int* count) {
  OR_ENTER();
  if (count == nullptr) return fail(orErrorInvalidValue, "orGetDeviceCount: count is NULL");
  *count = deviceCount();
  return orSuccess;
}

// No OR_ENTER: these two answer from the configuration and the fork state, so a
// process may ask them and still fork a child that uses the device.
OR_API orError_t orGetDeviceCountNoInit(int* count) {
  if (count == nullptr) {
    return fail(orErrorInvalidValue, "orGetDeviceCountNoInit: count is NULL");
  }
  return configuredDeviceCount(count);
}

OR_API orError_t orIsInBadFork(int* inBadFork) {
  if (inBadFork == nullptr) return fail(orErrorInvalidValue, "orIsInBadFork: inBadFork is NULL");
  *inBadFork = openreg::inBadFork() ? 1 : 0;
  return orSuccess;
}

OR_API orError_t orSetDevice(int index) {
  OR_ENTER();
  OR_RETURN_IF_ERROR(checkDeviceIndex(index));
  t_currentDevice = index;
  return orSuccess;
}

OR_API orError_t orGetDevice(int* index) {
  OR_ENTER();
  if (index == nullptr) return fail(orErrorInvalidValue, "orGetDevice: device is NULL");
  *index = t_currentDevice;
  return orSuccess;
}

OR_API orError_t orDeviceSynchronize(void) {
  OR_ENTER();
  OR_RETURN_IF_ERROR(checkDeviceIndex(t_currentDevice));
  synchronizeDeviceStreams(t_currentDevice);
  return orSuccess;
}

OR_API orError_t orGetDeviceProperties(orDeviceProp* prop, int index) {
  OR_ENTER();
  if (prop == nullptr) {
    return fail(orErrorInvalidValue, "orGetDeviceProperties: prop is NULL");
  }
  OR_RETURN_IF_ERROR(checkDeviceIndex(index));
  memset(prop, 0, sizeof(*prop));
  strncpy(prop->name, "openreg simulated device", sizeof(prop->name) - 1);
  prop->totalGlobalMem = device(index).allocator.capacity();
  unsigned cpus = std::thread::hardware_concurrency();
  prop->multiProcessorCount = cpus == 0 ? 1 : int(cpus);
  prop->major = OPENREG_RUNTIME_VERSION / 1000;
  prop->minor = OPENREG_RUNTIME_VERSION % 1000 / 10;
  prop->memoryAlignment = OR_MEMORY_ALIGNMENT;
  return orSuccess;
}

OR_API orError_t orMemGetInfo(size_t* freeBytes, size_t* totalBytes) {
  OR_ENTER();
  if (freeBytes == nullptr || totalBytes == nullptr) {
    return fail(orErrorInvalidValue, "orMemGetInfo: free or total is NULL");
  }
  OR_RETURN_IF_ERROR(checkDeviceIndex(t_currentDevice));
  DeviceAllocator& a = device(t_currentDevice).allocator;
  *freeBytes = a.freeBytes();
  *totalBytes = a.capacity();
  return orSuccess;
}

OR_API orError_t orDeviceGetStreamPriorityRange(int* leastPriority,
                                                int* greatestPriority) {
  OR_ENTER();
  // Either may be NULL, as in CUDA.
  if (leastPriority != nullptr) *leastPriority = kLeastPriority;
  if (greatestPriority != nullptr) *greatestPriority = kGreatestPriority;
  return orSuccess;
}

OR_API orError_t orRuntimeGetVersion(int* version) {
  OR_ENTER();
  if (version == nullptr) {
    return fail(orErrorInvalidValue, "orRuntimeGetVersion: version is NULL");
  }
  *version = OPENREG_RUNTIME_VERSION;
  return orSuccess;
}

}  // extern "C"
