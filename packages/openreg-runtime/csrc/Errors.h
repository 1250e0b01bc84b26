// Per-thread error state shared by every or* entry point.
#pragma once

#include <openreg/openreg.h>

namespace openreg {

// Record `code` with a printf-style detail message as the calling thread's
// last error and return `code`, so failure paths read `return fail(...)`.
orError_t fail(orError_t code, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

}  // namespace openreg

// Early-return helper for internal calls that already set the last error.
#define OR_RETURN_IF_ERROR(expr)                \
  do {                                          \
    orError_t or_err_ = (expr);                 \
    if (or_err_ != orSuccess) return or_err_;   \
  } while (0)
