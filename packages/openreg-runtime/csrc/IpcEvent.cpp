// The shared slots of interprocess events and waiting on them.
#include "IpcEvent.h"

#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <mutex>
#include <vector>

#include "Errors.h"

namespace openreg {
namespace {

// How often a waiter checks that the recording process still exists.
constexpr long kLivenessPollNs = 100 * 1000 * 1000;

struct Pool {
  std::mutex mutex;
  int fd = -1;
  SharedEventState* slots = nullptr;
  uint32_t next = 0;
  std::vector<uint32_t> free;
  int imports[kSharedEventSlots] = {};
  bool destroyed[kSharedEventSlots] = {};
};

Pool& pool() {
  static auto* p = new Pool;  // leaked: stream workers may stamp during exit
  return *p;
}

orError_t mapPoolLocked(Pool& p) {
  if (p.slots != nullptr) return orSuccess;
  int fd = memfd_create("openreg-ipc-events", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, off_t(kSharedEventPoolSize)) != 0) {
    int e = errno;
    if (fd >= 0) close(fd);
    return fail(orErrorInitializationError,
                "creating the shared memory of interprocess events failed: %s",
                strerror(e));
  }
  void* m = mmap(nullptr, kSharedEventPoolSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    int e = errno;
    close(fd);
    return fail(orErrorInitializationError,
                "mapping the shared memory of interprocess events failed: %s",
                strerror(e));
  }
  madvise(m, kSharedEventPoolSize, MADV_DONTFORK);
  p.fd = fd;
  p.slots = static_cast<SharedEventState*>(m);
  return orSuccess;
}

void recycleLocked(Pool& p, uint32_t slot) {
  // Even: stale for every handle and for stamps still queued for it.
  p.slots[slot].generation.fetch_add(1, std::memory_order_acq_rel);
  p.destroyed[slot] = false;
  p.free.push_back(slot);
}

long futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  // Not FUTEX_PRIVATE_FLAG: waiters and wakers are in different processes.
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout,
                 nullptr, 0);
}

bool processExited(pid_t pid) {
  return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH;
}

}  // namespace

orError_t allocateSharedEvent(int device, SharedEventState** state, uint32_t* slot,
                              uint32_t* generation) {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  OR_RETURN_IF_ERROR(mapPoolLocked(p));
  uint32_t index;
  if (!p.free.empty()) {
    index = p.free.back();
    p.free.pop_back();
  } else if (p.next < kSharedEventSlots) {
    index = p.next++;
  } else {
    return fail(orErrorMemoryAllocation,
                "too many live interprocess events (at most %u per process)",
                kSharedEventSlots);
  }
  SharedEventState& s = p.slots[index];
  s.recorded.store(0, std::memory_order_relaxed);
  s.completed.store(0, std::memory_order_relaxed);
  s.recorderPid.store(0, std::memory_order_relaxed);
  s.device.store(device, std::memory_order_relaxed);
  uint32_t gen = s.generation.load(std::memory_order_relaxed) + 1;  // odd: live
  s.generation.store(gen, std::memory_order_release);
  *state = &s;
  *slot = index;
  *generation = gen;
  return orSuccess;
}

void destroySharedEvent(uint32_t slot) {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (p.imports[slot] > 0) {
    p.destroyed[slot] = true;  // importers keep using it; nobody new may open it
  } else {
    recycleLocked(p, slot);
  }
}

orError_t acquireEventImport(uint32_t slot, uint32_t generation, int* device) {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (p.slots == nullptr || slot >= p.next ||
      p.slots[slot].generation.load(std::memory_order_acquire) != generation ||
      p.destroyed[slot]) {
    return fail(orErrorIpcHandleStale,
                "the exporting process destroyed the interprocess event this handle "
                "names after creating the handle");
  }
  ++p.imports[slot];
  *device = p.slots[slot].device.load(std::memory_order_relaxed);
  return orSuccess;
}

void releaseEventImport(uint32_t slot, uint32_t generation) {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (p.slots == nullptr || slot >= p.next || p.imports[slot] == 0 ||
      p.slots[slot].generation.load(std::memory_order_acquire) != generation) {
    return;
  }
  if (--p.imports[slot] == 0 && p.destroyed[slot]) recycleLocked(p, slot);
}

int sharedEventPoolFd() {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  return p.fd;
}

uint64_t beginSharedRecord(SharedEventState* s) {
  s->recorderPid.store(int32_t(getpid()), std::memory_order_relaxed);
  return s->recorded.fetch_add(1, std::memory_order_acq_rel) + 1;
}

// DOC START: shared-event-complete
void completeSharedRecord(SharedEventState* s, uint32_t generation, uint64_t n) {
  if (s->generation.load(std::memory_order_acquire) != generation) return;
  uint64_t done = s->completed.load(std::memory_order_relaxed);
  while (done < n &&
         !s->completed.compare_exchange_weak(done, n, std::memory_order_acq_rel)) {
  }
  s->wake.fetch_add(1, std::memory_order_release);
  futex(&s->wake, FUTEX_WAKE, INT_MAX, nullptr);
}
// DOC END: shared-event-complete

bool sharedRecordDone(const SharedEventState* s, uint64_t n) {
  return s->completed.load(std::memory_order_acquire) >= n;
}

orError_t waitSharedRecord(SharedEventState* s, uint32_t generation, uint64_t n) {
  const timespec poll{0, kLivenessPollNs};
  for (;;) {
    // Read the futex word before the condition: a completion after the check
    // changes the word, so the wait below returns at once.
    uint32_t word = s->wake.load(std::memory_order_acquire);
    if (sharedRecordDone(s, n)) return orSuccess;
    if (s->generation.load(std::memory_order_acquire) != generation) return orSuccess;
    long r = futex(&s->wake, FUTEX_WAIT, word, &poll);
    if (r != 0 && errno == ETIMEDOUT && !sharedRecordDone(s, n)) {
      pid_t recorder = s->recorderPid.load(std::memory_order_relaxed);
      if (recorder != getpid() && processExited(recorder)) {
        return fail(orErrorIpcExporterGone,
                    "process %d recorded this interprocess event and exited before "
                    "the recorded work completed",
                    int(recorder));
      }
    }
  }
}

}  // namespace openreg
