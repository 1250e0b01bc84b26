#pragma once

#include <c10/util/Exception.h>
#include <openreg/openreg.h>

#include "runtime/OpenRegMacros.h"

// Turns a runtime error code into a c10::Error carrying the runtime's own detailed
// message (which names the bad value and the valid choices), like C10_CUDA_CHECK.
#define OPENREG_CHECK(EXPR)                                                \
  do {                                                                     \
    const orError_t __openreg_err = (EXPR);                                \
    if (C10_UNLIKELY(__openreg_err != orSuccess)) {                        \
      ::c10::openreg::detail::throwRuntimeError(                           \
          __openreg_err, #EXPR, __func__, __FILE__, __LINE__);             \
    }                                                                      \
  } while (0)

namespace c10::openreg::detail {

[[noreturn]] OPENREG_TORCH_API void throwRuntimeError(orError_t error, const char* expr,
                                    const char* func, const char* file,
                                    uint32_t line);

} // namespace c10::openreg::detail
