// Hands openreg's profiler pieces to PyTorch when the backend library loads: the legacy
// profiler's device timing (ProfilerStubs, for use_device="openreg" without Kineto) and,
// where the wheel has Kineto, the factory of openreg's Kineto activity profiler. Both
// only act once a profiler asks for openreg device activity; nothing is observed before.

#include <torch/csrc/profiler/stubs/base.h>

#include "profiler/OpenRegActivityProfiler.h"
#include "profiler/OpenRegProfilerStubs.h"

namespace c10::openreg::profiler {
namespace {

// DOC START: register-profiler
const bool registered = [] {
  torch::profiler::impl::registerPrivateUse1Methods(&profiler_stubs());
#ifdef USE_KINETO
  register_activity_profiler();
#endif
  return true;
}();
// DOC END: register-profiler

} // namespace
} // namespace c10::openreg::profiler
