// Interprocess events (orEventInterprocess): their state lives in a slot of a
// per-process shared memory file, mapped by every process that opened one of
// its handles. Records from any process number themselves in `recorded`;
// the stream that reaches a record raises `completed` to its number and wakes
// waiters through a futex on `wake`, which works across processes because
// the mapping is shared.
#pragma once

#include <openreg/openreg.h>

#include <atomic>
#include <cstdint>

namespace openreg {

struct alignas(64) SharedEventState {
  std::atomic<uint32_t> generation;   // odd while the slot is in use
  std::atomic<uint32_t> wake;         // futex word: bumped by each completion
  std::atomic<uint64_t> recorded;     // number of the latest record
  std::atomic<uint64_t> completed;    // highest completed record
  std::atomic<int32_t> recorderPid;   // process of the latest record
  std::atomic<int32_t> device;
};
static_assert(sizeof(SharedEventState) == 64, "one cache line per slot");
static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "shared atomics must not hide a process-local lock");

constexpr uint32_t kSharedEventSlots = 4096;
constexpr size_t kSharedEventPoolSize = kSharedEventSlots * sizeof(SharedEventState);

// ------------------------------------------------ the exporter's slot pool

// A fresh slot for a new interprocess event of `device`.
orError_t allocateSharedEvent(int device, SharedEventState** state, uint32_t* slot,
                              uint32_t* generation);
// The event was destroyed here: new opens fail; the slot is recycled once no
// other process has it open.
void destroySharedEvent(uint32_t slot);
// The server's bookkeeping of other processes' opens.
orError_t acquireEventImport(uint32_t slot, uint32_t generation, int* device);
void releaseEventImport(uint32_t slot, uint32_t generation);
// The pool's memory file (-1 before the first interprocess event).
int sharedEventPoolFd();

// --------------------------------------------- operations on a shared state

// Number a new record (by this process).
uint64_t beginSharedRecord(SharedEventState* s);
// Record `n` has completed (ignored if the slot was recycled meanwhile).
void completeSharedRecord(SharedEventState* s, uint32_t generation, uint64_t n);
bool sharedRecordDone(const SharedEventState* s, uint64_t n);
// Wait until record `n` completed. If the recording process exits first,
// returns orErrorIpcExporterGone (with a message) within about 0.1 s.
orError_t waitSharedRecord(SharedEventState* s, uint32_t generation, uint64_t n);

}  // namespace openreg
