#pragma once

// openreg's device activity in torch.profiler, after Kineto's CUPTI activity profiler:
// a Kineto child profiler ("plugin") that PyTorch's PrivateUse1 profiler registry hands
// to Kineto (torch/csrc/profiler/standalone/privateuse1_profiler.h). Asked for
// ProfilerActivity.PrivateUse1, PyTorch selects Kineto's device activity types (kernel,
// memcpy, memset); a session then records openreg's launches (OpenRegActivityRecorder)
// and gives them to Kineto as device activities linked to the CPU operators that issued
// them. Only built where the wheel has Kineto (USE_KINETO).

#ifdef USE_KINETO

namespace c10::openreg::profiler {

// Gives PyTorch's PrivateUse1 profiler registry the factory of openreg's Kineto profiler
// (Kineto instantiates it once it initialises). Kineto's headers stay inside the .cpp:
// see there why.
void register_activity_profiler();

} // namespace c10::openreg::profiler

#endif // USE_KINETO
