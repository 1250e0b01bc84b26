#pragma once

// The legacy profiler's device timing for openreg, after PyTorch's CUDA profiler stubs
// (torch/csrc/profiler/stubs/cuda.cpp): `torch.autograd.profiler.profile(use_device=
// "openreg")` without Kineto (ProfilerState.KINETO_PRIVATEUSE1_FALLBACK) records a timed
// openreg event on the current stream when each operator starts and ends, and reports
// their elapsed time as the operator's device time.

#include <torch/csrc/profiler/stubs/base.h>

namespace c10::openreg::profiler {

torch::profiler::impl::ProfilerStubs& profiler_stubs();

} // namespace c10::openreg::profiler
