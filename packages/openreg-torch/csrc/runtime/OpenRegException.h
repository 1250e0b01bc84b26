#pragma once

#include <c10/util/Exception.h>
#include <openreg/openreg.h>

#include "runtime/OpenRegMacros.h"

// DOC START: openreg-check
// Turns a runtime error code into a c10::Error carrying the runtime's own detailed
// message (which names the bad value and the valid choices), like C10_CUDA_CHECK. The
// error is handled once thrown: it is cleared from the runtime's per-thread last error,
// so it does not show up in the diagnostics of a later call.
#define OPENREG_CHECK(EXPR)                                                \
  do {                                                                     \
    const orError_t __openreg_err = (EXPR);                                \
    if (C10_UNLIKELY(__openreg_err != orSuccess)) {                        \
      ::c10::openreg::detail::throwRuntimeError(                           \
          __openreg_err, #EXPR, __func__, __FILE__, __LINE__);             \
    }                                                                      \
  } while (0)

// The answer of orStreamQuery / orEventQuery: true when the work has completed, false
// while it is pending. orErrorNotReady is that answer, not a failure, so it is cleared
// from the last error; any other error throws as OPENREG_CHECK does. Every query of
// openreg-torch goes through this one decision.
#define OPENREG_QUERY(EXPR)                                                \
  ::c10::openreg::detail::queryCompleted(                                  \
      (EXPR), #EXPR, __func__, __FILE__, __LINE__)
// DOC END: openreg-check

namespace c10::openreg::detail {

[[noreturn]] OPENREG_TORCH_API void throwRuntimeError(orError_t error, const char* expr,
                                    const char* func, const char* file,
                                    uint32_t line);

inline bool queryCompleted(orError_t error, const char* expr, const char* func,
                           const char* file, uint32_t line) {
  if (C10_LIKELY(error == orSuccess)) {
    return true;
  }
  if (error == orErrorNotReady) {
    (void)orGetLastError();
    return false;
  }
  throwRuntimeError(error, expr, func, file, line);
}

} // namespace c10::openreg::detail
