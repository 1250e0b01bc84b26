// Deliberate memory and UB bugs, compiled only into sanitizer builds
// (OPENREG_SANITIZE=1). tests/test_sanitizers.py runs them in a child process
// to prove the sanitizers are really active and stop the process: without
// that, a broken LD_PRELOAD or a missing flag would make the sanitized test
// run pass without checking anything.
#include <climits>
#include <stdexcept>
#include <string>

#include "Check.h"

namespace openreg::python {

void bindSanitizerSelfTest(py::module_& m) {
#ifdef OPENREG_SANITIZER_SELFTEST
  m.def("_sanitizer_selftest", [](const std::string& bug) {
    if (bug == "heap-buffer-overflow") {
      // Through a volatile pointer: the store cannot be optimised away, and
      // UBSan cannot see the object's size, so the finding is ASan's.
      char* volatile p = new char[16];
      static_cast<volatile char*>(p)[16] = 1;
      delete[] p;
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

}  // namespace openreg::python
