// The device table, created once at initialisation.
#pragma once

#include <openreg/openreg.h>

#include "DeviceAllocator.h"
#include "Env.h"

namespace openreg {

struct Device {
  int index = 0;
  DeviceAllocator allocator;
};

void createDevices(const EnvConfig& config);
// `index` must already be validated.
Device& device(int index);
// The live allocation containing `p`, which lies in device `d`'s memory
// (deviceOfView): one of this process's, or one opened from another process.
bool findAllocation(int d, uintptr_t p, Allocation* out);

}  // namespace openreg
