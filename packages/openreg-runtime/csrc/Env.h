// Parsing of the OPENREG_* environment variables, read once at start-up.
#pragma once

#include <openreg/openreg.h>

#include <cstddef>

namespace openreg {

constexpr int kDefaultDeviceCount = 2;
constexpr size_t kDefaultDeviceMemory = size_t(8) << 30;  // 8 GiB
// Two views per device must fit in the 128 TiB user address space even with
// OR_MAX_DEVICES devices, so one device may not exceed 1 TiB.
constexpr size_t kMaxDeviceMemory = size_t(1) << 40;

struct EnvConfig {
  int deviceCount = kDefaultDeviceCount;
  size_t deviceMemory = kDefaultDeviceMemory;
};

// Parse "8GiB", "512MiB", "64KiB", "2G", "1.5GiB" or plain bytes (units are
// powers of 1024, case-insensitive). Returns false on malformed input.
bool parseByteSize(const char* text, size_t* out);

// Fill `config` from the environment. On a malformed variable returns
// orErrorInitializationError after setting a message that names the
// variable, its value and the accepted forms.
orError_t readEnvConfig(EnvConfig* config);

}  // namespace openreg
