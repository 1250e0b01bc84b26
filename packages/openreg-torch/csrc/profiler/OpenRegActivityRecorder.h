#pragma once

// Device activity of openreg as a profiler sees it, after CUPTI's activity records: each
// kernel, copy, fill and event record with its device-side start and end, its device and
// stream, and the correlation id of the CPU operator that issued it. The recorder watches
// the launch point (execution/DeviceLaunch.h) only while a profiler session records; the
// times are taken where the work runs, by host functions the stream itself executes
// just before and just after the work (orLaunchHostFunc), in the system clock's
// nanoseconds as Kineto's CPU events are.
//
// Kineto-free: the Kineto session (OpenRegActivityProfiler.cpp) turns the records into
// trace activities.

#include <c10/core/Device.h>
#include <c10/core/Stream.h>
#include <openreg/openreg.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "execution/DeviceLaunch.h"
#include "runtime/OpenRegMacros.h"

namespace c10::openreg::profiler {

// DOC START: device-activity
struct DeviceActivity {
  at::native::openreg::DeviceWork::Kind kind;
  std::string name;             // the operator for kernels, "Memcpy HtoD"... otherwise
  DeviceIndex device;
  StreamId stream_id;
  size_t bytes;
  orMemcpyKind copy_kind;
  uint64_t correlation_id;      // the innermost CPU operator on the issuing thread, or 0
  int64_t start_ns;             // system clock, stamped on the stream before the work
  int64_t end_ns;               // ... and after it
  // The issue on the host (the runtime call, CUDA's "runtime" activity): thread and times.
  int32_t issuing_thread;       // the OS thread id
  int64_t issue_start_ns;
  int64_t issue_end_ns;
};
// DOC END: device-activity

// Correlation ids of the CPU operators running on this thread, innermost last; the
// profiler pushes one when an operator starts and pops it when it ends.
OPENREG_TORCH_API void push_correlation_id(uint64_t id);
OPENREG_TORCH_API void pop_correlation_id();

// Starts recording device activity (installs the launch-point observer). False, with a
// warning, when another observer of device work is installed.
OPENREG_TORCH_API bool start_device_activity();
// Stops recording, waits for the recorded work to run (bounded by the streams' own
// progress) and returns what completed, in issue order.
OPENREG_TORCH_API std::vector<DeviceActivity> stop_device_activity();

} // namespace c10::openreg::profiler
