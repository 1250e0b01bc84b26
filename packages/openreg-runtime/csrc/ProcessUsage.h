// Per-process device memory published for openreg-smi, after NVML's process list.
//
// A process that allocates device memory owns one small file, named by its pid, in the
// usage directory; it is mapped shared and holds, per device, the bytes this process
// has allocated from the device (what orMalloc handed out, i.e. the caching
// allocator's segments, not the tensors inside them). It is written when a device
// allocation is made or freed, with a plain store to the mapping: no system call, and
// never on a cached reuse, which does not reach the runtime. The file is removed at
// exit; a process that died without exiting leaves it behind, and the reader
// (orGetProcessUsage) removes it once the pid is gone or names another process.
#pragma once

#include <cstddef>

namespace openreg {

// Record that `device` now has `usedBytes` allocated by this process. Best effort:
// if the usage directory cannot be written the process is simply not listed.
void publishDeviceUsage(int device, size_t usedBytes);

}  // namespace openreg
