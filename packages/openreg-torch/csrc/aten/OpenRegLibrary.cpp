// The `openreg` operator namespace. A namespace is defined by exactly one
// TORCH_LIBRARY in the whole process, so it lives here, in the package every other
// openreg package builds on; they add operators with TORCH_LIBRARY_FRAGMENT(openreg, m).

#include <torch/library.h>

// DOC START: openreg-library
TORCH_LIBRARY(openreg, m) {
  // Operators are defined by the packages that implement them (fragments).
}
// DOC END: openreg-library
