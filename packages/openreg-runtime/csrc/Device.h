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

}  // namespace openreg
