// Deliberate memory and UB bugs, compiled only into sanitizer builds (OPENREG_SANITIZE=1).
// packages/openreg-torch/tests/test_sanitizers.py runs them in a child process that has
// torch and openreg-torch loaded, to prove the sanitizer options the env needs around an
// uninstrumented libtorch still report a bug in openreg-torch's code and stop the process.
#include "python/SanitizerSelfTest.h"

#include <climits>
#include <stdexcept>
#include <string>

namespace openreg_torch {

void init_sanitizer_selftest_bindings(pybind11::module_& m) {
#ifdef OPENREG_TORCH_SANITIZER_SELFTEST
  m.def("_sanitizer_selftest", [](const std::string& bug) {
    if (bug == "heap-use-after-free") {
      // Through a volatile pointer, so the read cannot be optimised away.
      int* volatile p = new int[4];
      delete[] p;
      volatile int value = static_cast<volatile int*>(p)[1];
      (void)value;
    } else if (bug == "leak") {
      // The only pointer to the block is dropped: LeakSanitizer's next check reports it.
      int* volatile p = new int[4];
      p = nullptr;
    } else if (bug == "signed-integer-overflow") {
      volatile int x = INT_MAX;
      x = x + 1;
    } else {
      throw std::invalid_argument("unknown bug: " + bug);
    }
  });
#else
  (void)m;
#endif
}

} // namespace openreg_torch
