#include "runtime/OpenRegException.h"

#include <string>

namespace c10::openreg::detail {

void throwRuntimeError(orError_t error, const char* expr, const char* func,
                       const char* file, uint32_t line) {
  // The runtime keeps a per-thread message that is more precise than the code's
  // generic string; prefer it when it describes this error.
  const char* detail = orPeekAtLastError() == error ? orGetLastErrorMessage() : "";
  std::string message = std::string("openreg error: ") +
      (*detail ? detail : orGetErrorString(error)) + " (" + orGetErrorName(error) +
      " from " + expr + ")";
  // Handled from here on, as C10_CUDA_CHECK does with cudaGetLastError.
  (void)orGetLastError();
  const c10::SourceLocation location{func, file, line};
  if (error == orErrorMemoryAllocation) {
    throw c10::OutOfMemoryError(location, std::move(message));
  }
  throw c10::Error(location, std::move(message));
}

} // namespace c10::openreg::detail
