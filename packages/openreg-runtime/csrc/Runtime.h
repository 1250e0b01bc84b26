// Process-wide runtime state: lazy initialisation, the forked-child check and
// the per-thread current device. Every public entry point starts with
// OR_ENTER(), which on the hot path is a single acquire load.
#pragma once

#include <openreg/openreg.h>

#include <atomic>

#include "Env.h"
#include "ThreadLocal.h"

namespace openreg {

enum RuntimeState : int {
  kUninitialized = 0,
  kReady = 1,
  kFailed = 2,   // a malformed OPENREG_* variable; sticky
  kForked = 3,   // we are a child forked after initialisation; sticky
};

extern std::atomic<int> g_state;
// Immutable once g_state is kReady.
extern EnvConfig g_config;
extern OR_HOT_THREAD_LOCAL int t_currentDevice;

orError_t enterSlow(int state);

inline orError_t enter() {
  int s = g_state.load(std::memory_order_acquire);
  if (__builtin_expect(s == kReady, 1)) return orSuccess;
  return enterSlow(s);
}

inline int deviceCount() { return g_config.deviceCount; }

// The configured device count without initialising (orGetDeviceCountNoInit).
orError_t configuredDeviceCount(int* count);
// Whether this process was forked after the runtime initialised in its parent.
bool inBadFork();

// orErrorNoDevice / orErrorInvalidDevice with a message naming the range.
orError_t checkDeviceIndex(int device);

}  // namespace openreg

#define OR_ENTER()                                   \
  do {                                               \
    orError_t or_enter_err_ = ::openreg::enter();    \
    if (or_enter_err_ != orSuccess) return or_enter_err_; \
  } while (0)
