// Lazy initialisation and fork handling.
#include "Runtime.h"

#include <pthread.h>
#include <unistd.h>

#include <mutex>
#include <string>

#include "Device.h"
#include "Errors.h"
#include "FaultHandler.h"
#include "Ipc.h"

namespace openreg {

std::atomic<int> g_state{kUninitialized};
EnvConfig g_config;
OR_HOT_THREAD_LOCAL int t_currentDevice = 0;

namespace {

std::mutex g_initMutex;  // trivially destructible in libstdc++
// Leaked on purpose: worker threads may still run during static destruction.
std::string* g_initFailure = nullptr;
pid_t g_initPid = 0;
// The OPENREG_* variables are read once per process, by whichever comes first:
// a count that must not initialise, or initialisation. Both then agree even if
// the environment changes in between. Guarded by g_initMutex.
bool g_configRead = false;
orError_t g_configError = orSuccess;

orError_t loadConfigLocked() {
  if (!g_configRead) {
    EnvConfig config;
    g_configError = readEnvConfig(&config);
    if (g_configError == orSuccess) {
      g_config = config;
    } else {
      g_initFailure = new std::string(orGetLastErrorMessage());
    }
    g_configRead = true;
  }
  if (g_configError != orSuccess) {
    return fail(g_configError, "%s", g_initFailure->c_str());
  }
  return orSuccess;
}

void onForkChild() {
  // Only a runtime that was actually started is unusable in the child: its
  // arenas are MADV_DONTFORK (not inherited) and its worker threads are gone.
  if (g_state.load(std::memory_order_relaxed) == kReady) {
    g_state.store(kForked, std::memory_order_release);
    ipcAfterForkChild();
  }
}

orError_t initialize() {
  std::lock_guard<std::mutex> lock(g_initMutex);
  int s = g_state.load(std::memory_order_acquire);
  if (s != kUninitialized) return orSuccess;  // another thread won the race

  static bool atforkRegistered = false;
  if (!atforkRegistered) {
    pthread_atfork(nullptr, nullptr, onForkChild);
    atforkRegistered = true;
  }
  orError_t err = loadConfigLocked();
  if (err != orSuccess) {
    g_state.store(kFailed, std::memory_order_release);
    return err;
  }
  createDevices(g_config);
  g_initPid = getpid();
  installFaultHandler();
  g_state.store(kReady, std::memory_order_release);
  return orSuccess;
}

}  // namespace

orError_t enterSlow(int state) {
  switch (state) {
    case kUninitialized: {
      orError_t err = initialize();
      if (err != orSuccess) return err;
      return enter();
    }
    case kFailed:
      return fail(orErrorInitializationError, "%s", g_initFailure->c_str());
    case kForked:
      return fail(orErrorForkedProcess,
                  "openreg was initialised in process %d and this process (%d) "
                  "was forked from it; device memory, streams and events are not "
                  "inherited by a child. Initialise openreg only after fork, or "
                  "use the 'spawn' start method of multiprocessing",
                  int(g_initPid), int(getpid()));
  }
  return orSuccess;
}

orError_t configuredDeviceCount(int* count) {
  const int s = g_state.load(std::memory_order_acquire);
  if (s == kReady || s == kForked) {
    *count = deviceCount();
    return orSuccess;
  }
  std::lock_guard<std::mutex> lock(g_initMutex);
  OR_RETURN_IF_ERROR(loadConfigLocked());
  *count = g_config.deviceCount;
  return orSuccess;
}

bool inBadFork() { return g_state.load(std::memory_order_acquire) == kForked; }

orError_t checkDeviceIndex(int device) {
  int n = deviceCount();
  if (n == 0) {
    return fail(orErrorNoDevice,
                "no openreg device is configured (OPENREG_DEVICE_COUNT=0), so "
                "device %d does not exist",
                device);
  }
  if (device < 0 || device >= n) {
    return fail(orErrorInvalidDevice,
                "device index %d is out of range: %d device%s, valid indices 0..%d",
                device, n, n == 1 ? "" : "s", n - 1);
  }
  return orSuccess;
}

}  // namespace openreg
