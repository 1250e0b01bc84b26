// OPENREG_DEVICE_COUNT / OPENREG_DEVICE_MEMORY parsing.
#include "Env.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "Errors.h"

namespace openreg {
namespace {

struct Unit {
  const char* name;
  int shift;
};

// Decimal-looking suffixes (KB, GB) are accepted as binary too: a memory
// size written as "2GB" almost always means 2 GiB, and silently taking 7%
// less would surprise more than it helps.
constexpr Unit kUnits[] = {
    {"", 0},    {"b", 0},    {"k", 10},   {"kb", 10}, {"kib", 10},
    {"m", 20},  {"mb", 20},  {"mib", 20}, {"g", 30},  {"gb", 30},
    {"gib", 30}, {"t", 40},  {"tb", 40},  {"tib", 40},
};

bool unitShift(const char* suffix, int* shift) {
  char lower[8];
  size_t n = strlen(suffix);
  if (n >= sizeof(lower)) return false;
  for (size_t i = 0; i <= n; ++i) lower[i] = char(tolower((unsigned char)suffix[i]));
  for (const Unit& u : kUnits) {
    if (strcmp(lower, u.name) == 0) {
      *shift = u.shift;
      return true;
    }
  }
  return false;
}

}  // namespace

bool parseByteSize(const char* text, size_t* out) {
  const char* p = text;
  while (isspace((unsigned char)*p)) ++p;
  if (!isdigit((unsigned char)*p)) return false;  // no sign, no empty string
  const char* numStart = p;
  while (isdigit((unsigned char)*p)) ++p;
  bool fractional = false;
  if (*p == '.') {
    fractional = true;
    ++p;
    if (!isdigit((unsigned char)*p)) return false;
    while (isdigit((unsigned char)*p)) ++p;
  }
  const char* numEnd = p;
  while (isspace((unsigned char)*p)) ++p;
  const char* suffix = p;
  const char* suffixEnd = suffix;
  while (isalpha((unsigned char)*suffixEnd)) ++suffixEnd;
  const char* tail = suffixEnd;
  while (isspace((unsigned char)*tail)) ++tail;
  if (*tail != '\0') return false;
  char unit[8] = {0};
  size_t unitLen = size_t(suffixEnd - suffix);
  if (unitLen >= sizeof(unit)) return false;
  memcpy(unit, suffix, unitLen);
  int shift = 0;
  if (!unitShift(unit, &shift)) return false;

  std::string digits(numStart, numEnd);
  if (!fractional) {
    // Integers are parsed exactly; doubles would lose bytes above 2^53.
    errno = 0;
    char* end = nullptr;
    unsigned long long v = strtoull(digits.c_str(), &end, 10);
    if (errno != 0 || (shift > 0 && v > (~0ULL >> shift))) return false;
    *out = size_t(v << shift);
    return true;
  }
  double v = strtod(digits.c_str(), nullptr) * std::ldexp(1.0, shift);
  if (!(v < 18446744073709551615.0)) return false;
  *out = size_t(std::llround(v));
  return true;
}

orError_t readEnvConfig(EnvConfig* config) {
  *config = EnvConfig{};
  if (const char* v = getenv("OPENREG_DEVICE_COUNT")) {
    char* end = nullptr;
    errno = 0;
    long n = strtol(v, &end, 10);
    bool ok = *v != '\0' && errno == 0 && end != v && *end == '\0' && n >= 0 &&
              n <= OR_MAX_DEVICES;
    if (!ok) {
      return fail(orErrorInitializationError,
                  "OPENREG_DEVICE_COUNT=\"%s\" is not valid: expected an integer "
                  "from 0 to %d (default %d)",
                  v, OR_MAX_DEVICES, kDefaultDeviceCount);
    }
    config->deviceCount = int(n);
  }
  if (const char* v = getenv("OPENREG_DEVICE_MEMORY")) {
    size_t bytes = 0;
    bool ok = parseByteSize(v, &bytes) && bytes > 0 && bytes <= kMaxDeviceMemory;
    if (!ok) {
      return fail(orErrorInitializationError,
                  "OPENREG_DEVICE_MEMORY=\"%s\" is not valid: expected a size from "
                  "1 byte to 1TiB, as plain bytes (\"1073741824\") or a number "
                  "with a binary unit K/KiB, M/MiB, G/GiB, T/TiB (\"512MiB\", "
                  "\"1.5GiB\", \"2G\"); default 8GiB",
                  v);
    }
    config->deviceMemory = bytes;
  }
  return orSuccess;
}

}  // namespace openreg
