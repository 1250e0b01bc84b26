// Per-process usage files (openreg-smi): publishing and listing. See ProcessUsage.h.
#include "ProcessUsage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "Errors.h"
#include "Runtime.h"

namespace openreg {
namespace {

constexpr uint32_t kUsageMagic = 0x4d53524f;  // "ORSM"
constexpr uint32_t kUsageVersion = 1;

// The file's layout; readers check magic and version before trusting the rest.
struct UsageRecord {
  uint32_t magic;
  uint32_t version;
  int32_t pid;
  int32_t deviceCount;
  uint64_t deviceMemory;
  uint64_t startTime;  // /proc/<pid>/stat start time: tells a reused pid apart
  uint64_t used[OR_MAX_DEVICES];  // written with single aligned (atomic) stores
};
static_assert(sizeof(UsageRecord) <= 4096, "one page");

// $OPENREG_USAGE_DIR, else a per-user directory in /dev/shm (memory-backed, like the
// records themselves), else in $TMPDIR or /tmp.
std::string usageDirectory() {
  if (const char* dir = getenv("OPENREG_USAGE_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  std::string base = "/dev/shm";
  struct stat st;
  if (stat(base.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    const char* tmp = getenv("TMPDIR");
    base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  return base + "/openreg-usage-" + std::to_string(getuid());
}

// Field 22 of /proc/<pid>/stat (clock ticks after boot); 0 when unreadable.
uint64_t processStartTime(int pid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  FILE* file = fopen(path, "r");
  if (file == nullptr) return 0;
  char buffer[1024];
  size_t n = fread(buffer, 1, sizeof(buffer) - 1, file);
  fclose(file);
  buffer[n] = '\0';
  // The command name (field 2) may hold spaces and parentheses: count from its end.
  const char* p = strrchr(buffer, ')');
  if (p == nullptr) return 0;
  for (int field = 2; field < 22 && *p != '\0'; ++p) {
    if (*p == ' ') ++field;
  }
  return strtoull(p, nullptr, 10);
}

bool isAlive(int pid, uint64_t startTime);
void listLive(const std::string& dir, std::vector<UsageRecord>* live);

// This process's record, mapped once on its first device allocation.
class Publisher {
 public:
  UsageRecord* record() {
    std::call_once(once_, [this] { open(); });
    return record_;
  }

  ~Publisher() {
    // Only the process that created the file removes it: a forked child inherits
    // the object but not the record.
    if (record_ != nullptr && getpid() == owner_) unlink(path_.c_str());
  }

 private:
  void open() {
    const std::string dir = usageDirectory();
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return;
    owner_ = getpid();
    path_ = dir + "/" + std::to_string(owner_);
    // Filled under a temporary name and renamed: a reader never sees half a header.
    const std::string temporary = dir + "/." + std::to_string(owner_) + ".tmp";
    int fd = ::open(temporary.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return;
    void* mapping = MAP_FAILED;
    if (ftruncate(fd, sizeof(UsageRecord)) == 0) {
      mapping = mmap(nullptr, sizeof(UsageRecord), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    close(fd);
    if (mapping == MAP_FAILED) {
      unlink(temporary.c_str());
      return;
    }
    auto* record = static_cast<UsageRecord*>(mapping);
    record->magic = kUsageMagic;
    record->version = kUsageVersion;
    record->pid = owner_;
    record->deviceCount = deviceCount();
    record->deviceMemory = g_config.deviceMemory;
    record->startTime = processStartTime(owner_);
    if (rename(temporary.c_str(), path_.c_str()) != 0) {
      munmap(mapping, sizeof(UsageRecord));
      unlink(temporary.c_str());
      return;
    }
    record_ = record;
    listLive(dir, nullptr);  // clear out what crashed processes left behind
  }

  std::once_flag once_;
  UsageRecord* record_ = nullptr;
  std::string path_;
  int owner_ = 0;
};

Publisher publisher;

// Whether `pid` is a live process that started at `startTime` (0: unknown, trust
// the pid).
bool isAlive(int pid, uint64_t startTime) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  const uint64_t now = processStartTime(pid);
  return startTime == 0 || now == 0 || now == startTime;
}

// The records of live processes in `dir` (when `live` is not null). Records of
// processes that died without exiting (or whose pid now names another process) are
// removed; files that are not records are left alone.
void listLive(const std::string& dir, std::vector<UsageRecord>* live) {
  DIR* listing = opendir(dir.c_str());
  if (listing == nullptr) return;  // no process has published yet
  while (const dirent* entry = readdir(listing)) {
    char* end = nullptr;
    const long pid = strtol(entry->d_name, &end, 10);
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9' || *end != '\0') continue;
    const std::string path = dir + "/" + entry->d_name;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    UsageRecord record;
    const ssize_t n = pread(fd, &record, sizeof(record), 0);
    close(fd);
    const bool valid = n == ssize_t(sizeof(record)) && record.magic == kUsageMagic &&
                       record.version == kUsageVersion && record.pid == pid &&
                       record.deviceCount >= 0 && record.deviceCount <= OR_MAX_DEVICES;
    if (!valid) continue;
    if (!isAlive(int(pid), record.startTime)) {
      unlink(path.c_str());
    } else if (live != nullptr) {
      live->push_back(record);
    }
  }
  closedir(listing);
}

}  // namespace

// DOC START: publish-usage
// Called by a device's allocator, under its lock, when what it has handed out changes.
void publishDeviceUsage(int device, size_t usedBytes) {
  if (UsageRecord* record = publisher.record()) {
    __atomic_store_n(&record->used[device], uint64_t(usedBytes), __ATOMIC_RELAXED);
  }
}
// DOC END: publish-usage

}  // namespace openreg

using namespace openreg;

extern "C" {

OR_API orError_t orGetProcessUsage(orProcessUsage* entries, int capacity, int* count) {
  if (count == nullptr) return fail(orErrorInvalidValue, "orGetProcessUsage: count is NULL");
  if (capacity < 0 || (capacity > 0 && entries == nullptr)) {
    return fail(orErrorInvalidValue,
                "orGetProcessUsage: entries must hold `capacity` (%d >= 0) records",
                capacity);
  }
  std::vector<UsageRecord> live;
  listLive(usageDirectory(), &live);
  for (int i = 0; i < int(live.size()) && i < capacity; ++i) {
    const UsageRecord& record = live[i];
    orProcessUsage& out = entries[i];
    memset(&out, 0, sizeof(out));
    out.pid = record.pid;
    out.deviceCount = record.deviceCount;
    out.deviceMemory = size_t(record.deviceMemory);
    for (int d = 0; d < record.deviceCount; ++d) out.usedBytes[d] = size_t(record.used[d]);
  }
  *count = int(live.size());
  return orSuccess;
}

}  // extern "C"
