// A stream: an ordered queue served by its own worker thread, plus tickets so
// work can also run in order on the calling thread (kernels, sync copies).
//
// Every piece of work takes the next ticket (`submitted_`); the stream's
// `completed_` counter advances strictly in ticket order, whoever runs the
// work. The worker starts a queued item only when completed_ == ticket - 1,
// and an inline caller runs only once all earlier tickets are done, so
// queued and inline work interleave in issue order.
//
// Inline work on an idle stream (every kernel of a thread that does not
// queue copies) takes and completes its ticket without the mutex: a
// compare-and-swap of `submitted_`, then a store of `completed_`. Whoever
// sleeps on the stream (the worker, waiters, close) announces itself first
// (`submitted_` for new work, `doneWaiters_` for waiters, `closed_`), and the
// lock-free side reads those after its own write, all sequentially
// consistent: one of the two always sees the other, so no wakeup is lost.
#pragma once

#include <openreg/openreg.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

#include "ThreadLocal.h"

namespace openreg {

// Stream priorities (lower is higher, as in CUDA). Recorded and reported
// only: each stream has its own worker and workers never preempt each other.
constexpr int kLeastPriority = 0;
constexpr int kGreatestPriority = -2;

struct Event;
struct SharedEventState;
class Stream;

struct WorkItem {
  enum Kind : uint8_t {
    kCopy, kMemset, kHostFunc, kEventStamp, kWaitStream,
    kSharedStamp,  // complete record `sharedRecord` of an interprocess event
    kSharedWait,   // wait until that record has completed
  };
  Kind kind = kHostFunc;
  uint64_t ticket = 0;
  void* dst = nullptr;  // kernel-view / host addresses, resolved at issue time
  const void* src = nullptr;
  size_t count = 0;
  int value = 0;
  orHostFn_t fn = nullptr;
  void* userData = nullptr;
  Event* event = nullptr;  // kEventStamp
  uint64_t eventSeq = 0;
  Stream* other = nullptr;  // kWaitStream: wait until other reaches otherTicket
  uint64_t otherTicket = 0;
  SharedEventState* shared = nullptr;  // kSharedStamp, kSharedWait
  uint32_t sharedGeneration = 0;
  uint64_t sharedRecord = 0;
};

class Stream {
 public:
  // SlotTable bookkeeping.
  std::atomic<uint32_t> slotGeneration{0};
  uint32_t slotIndex = 0;

  void open(int device, int priority);
  int device() const { return device_.load(std::memory_order_relaxed); }
  int priority() const { return priority_.load(std::memory_order_relaxed); }

  // Queue `item` for the worker (started on first use). False once closed.
  bool enqueue(WorkItem item);
  // Run fn() on the calling thread in stream order. False once closed.
  template <class F>
  bool runInline(F&& fn);

  bool idle() const;
  // Wait for all work issued so far (except the caller's own, when called
  // from work running on this stream).
  void synchronize();
  void waitFor(uint64_t ticket);
  bool reached(uint64_t ticket) const {
    return completed_.load(std::memory_order_acquire) >= ticket;
  }
  // Ticket after which an event recorded now completes; enqueues a marker
  // when a timing event must be stamped by the worker. *alreadyDone when the
  // stream is idle (caller stamps the time itself).
  uint64_t recordEvent(Event* event, uint64_t seq, bool timing, bool* alreadyDone);
  // Interprocess events: true when the stream is idle (the caller completes
  // record `n` itself); otherwise a marker completes it in stream order.
  bool recordShared(SharedEventState* state, uint32_t generation, uint64_t n);
  // Refuse new work, let pending work finish, join the worker.
  void close();

 private:
  struct InlineScope;
  bool beginInline(uint64_t* ticket);
  void endInline(uint64_t ticket);
  void pushLocked(WorkItem& item);
  void completeLocked(uint64_t ticket);
  void notifyLocked();
  void workerLoop();

  // Atomic: forEachLive may read a slot that is being recycled.
  std::atomic<int> device_{0};
  std::atomic<int> priority_{0};
  mutable std::mutex mutex_;
  std::condition_variable workCv_;  // the worker waits for a runnable item
  std::condition_variable doneCv_;  // everyone else waits for completions
  std::deque<WorkItem> queue_;
  // Taken by atomic increments: the idle inline path takes tickets unlocked.
  std::atomic<uint64_t> submitted_{0};
  // Written only by the holder of ticket completed_ + 1.
  std::atomic<uint64_t> completed_{0};
  // Changed under mutex_; read unlocked to skip the lock and notify (a futex
  // call) when nobody waits.
  std::atomic<int> doneWaiters_{0};
  std::atomic<bool> closed_{false};
  std::thread worker_;
};

// The stream whose work the calling thread is running right now (worker or
// inline), so nested calls on that stream run at once instead of deadlocking.
extern OR_HOT_THREAD_LOCAL Stream* t_activeStream;
extern OR_HOT_THREAD_LOCAL uint64_t t_activeTicket;

struct Stream::InlineScope {
  Stream* stream;
  uint64_t ticket;
  Stream* prevStream;
  uint64_t prevTicket;
  InlineScope(Stream* s, uint64_t t)
      : stream(s), ticket(t), prevStream(t_activeStream), prevTicket(t_activeTicket) {
    t_activeStream = s;
    t_activeTicket = t;
  }
  // Also runs when fn throws, so the stream never wedges.
  ~InlineScope() {
    t_activeStream = prevStream;
    t_activeTicket = prevTicket;
    stream->endInline(ticket);
  }
};

template <class F>
bool Stream::runInline(F&& fn) {
  if (t_activeStream == this) {  // already running in this stream's order
    fn();
    return true;
  }
  uint64_t ticket;
  if (!beginInline(&ticket)) return false;
  InlineScope scope(this, ticket);
  fn();
  return true;
}

// Handle resolution: NULL means the current device's default stream.
// orErrorInvalidResourceHandle for unknown or destroyed handles.
orError_t resolveStream(orStream_t handle, Stream** out);
Stream* defaultStream(int device);
void synchronizeDeviceStreams(int device);

}  // namespace openreg
