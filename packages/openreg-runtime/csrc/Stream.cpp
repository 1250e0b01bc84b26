// Stream queues, their worker threads and ticket ordering.
#include "Stream.h"

#include <cstring>

#include "Event.h"
#include "IpcEvent.h"

namespace openreg {

OR_HOT_THREAD_LOCAL Stream* t_activeStream = nullptr;
OR_HOT_THREAD_LOCAL uint64_t t_activeTicket = 0;

void Stream::open(int device, int priority) {
  std::lock_guard<std::mutex> lock(mutex_);
  device_.store(device, std::memory_order_relaxed);
  priority_.store(priority, std::memory_order_relaxed);
  // Counters carry over from a previous life of this object: events recorded
  // on it before stay complete.
  closed_.store(false);
}

bool Stream::enqueue(WorkItem item) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_.load()) return false;
  pushLocked(item);
  return true;
}

void Stream::pushLocked(WorkItem& item) {
  item.ticket = submitted_.fetch_add(1) + 1;
  queue_.push_back(item);
  if (!worker_.joinable()) {
    worker_ = std::thread(&Stream::workerLoop, this);
  } else if (queue_.size() == 1) {
    // The worker only sleeps with an empty queue or a not-yet-runnable front;
    // pushing behind an existing front changes nothing for it.
    workCv_.notify_one();
  }
}

bool Stream::beginInline(uint64_t* ticket) {
  // Idle: the next ticket is runnable at once. The CAS fails if anyone took a
  // ticket since the loads; completed_ cannot pass submitted_, so success
  // means completed_ == s still.
  uint64_t s = submitted_.load();
  if (completed_.load(std::memory_order_acquire) == s &&
      submitted_.compare_exchange_strong(s, s + 1)) {
    // close() marks the stream closed before counting what is still issued:
    // either it counted this ticket (and waits for it) or we see the mark.
    if (__builtin_expect(closed_.load(), 0)) {
      endInline(s + 1);
      return false;
    }
    *ticket = s + 1;
    return true;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  if (closed_.load()) return false;
  const uint64_t t = submitted_.fetch_add(1) + 1;
  if (completed_.load() != t - 1) {
    doneWaiters_.fetch_add(1);
    doneCv_.wait(lock, [&] { return completed_.load() == t - 1; });
    doneWaiters_.fetch_sub(1);
  }
  *ticket = t;
  return true;
}

void Stream::endInline(uint64_t ticket) {
  completed_.store(ticket);
  // Nothing issued after this work and nobody waiting: no one to wake.
  if (__builtin_expect(submitted_.load() == ticket && doneWaiters_.load() == 0, 1)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  notifyLocked();
}

void Stream::completeLocked(uint64_t ticket) {
  completed_.store(ticket);
  notifyLocked();
}

void Stream::notifyLocked() {
  if (!queue_.empty()) workCv_.notify_one();
  if (doneWaiters_.load() != 0) doneCv_.notify_all();
}

namespace {

void execute(const WorkItem& item) {
  switch (item.kind) {
    case WorkItem::kCopy:
      memmove(item.dst, item.src, item.count);
      break;
    case WorkItem::kMemset:
      memset(item.dst, item.value, item.count);
      break;
    case WorkItem::kHostFunc:
      item.fn(item.userData);
      break;
    case WorkItem::kEventStamp:
      stampEvent(item.event, item.eventSeq);
      break;
    case WorkItem::kWaitStream:
      item.other->waitFor(item.otherTicket);
      break;
    case WorkItem::kSharedStamp:
      completeSharedRecord(item.shared, item.sharedGeneration, item.sharedRecord);
      break;
    case WorkItem::kSharedWait:
      // A recorder that died never completes: the stream goes on rather than
      // wedging (the error is for orEventSynchronize callers to see).
      if (waitSharedRecord(item.shared, item.sharedGeneration, item.sharedRecord) !=
          orSuccess) {
        orGetLastError();
      }
      break;
  }
}

}  // namespace

void Stream::workerLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    workCv_.wait(lock, [&] {
      if (queue_.empty()) return closed_.load();
      return queue_.front().ticket == completed_.load() + 1;
    });
    if (queue_.empty()) return;  // closed and drained
    WorkItem item = queue_.front();
    queue_.pop_front();
    lock.unlock();
    t_activeStream = this;
    t_activeTicket = item.ticket;
    execute(item);
    t_activeStream = nullptr;
    lock.lock();
    completeLocked(item.ticket);
  }
}

bool Stream::idle() const {
  // submitted first: work issued after this load may finish meanwhile, which
  // only makes the answer more "done", never wrongly so.
  uint64_t s = submitted_.load(std::memory_order_acquire);
  return completed_.load(std::memory_order_acquire) >= s;
}

void Stream::waitFor(uint64_t ticket) {
  if (reached(ticket)) return;
  std::unique_lock<std::mutex> lock(mutex_);
  doneWaiters_.fetch_add(1);
  doneCv_.wait(lock, [&] { return completed_.load() >= ticket; });
  doneWaiters_.fetch_sub(1);
}

void Stream::synchronize() {
  uint64_t target = submitted_.load(std::memory_order_acquire);
  // Work running on this very stream cannot wait for itself.
  if (t_activeStream == this && target >= t_activeTicket) target = t_activeTicket - 1;
  waitFor(target);
}

uint64_t Stream::recordEvent(Event* event, uint64_t seq, bool timing,
                             bool* alreadyDone) {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t submitted = submitted_.load();
  *alreadyDone = completed_.load() == submitted;
  if (*alreadyDone || !timing || closed_.load()) return submitted;
  WorkItem marker;
  marker.kind = WorkItem::kEventStamp;
  marker.event = event;
  marker.eventSeq = seq;
  pushLocked(marker);
  return marker.ticket;
}

bool Stream::recordShared(SharedEventState* state, uint32_t generation, uint64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t submitted = submitted_.load();
  if (completed_.load() == submitted || closed_.load()) return true;
  WorkItem marker;
  marker.kind = WorkItem::kSharedStamp;
  marker.shared = state;
  marker.sharedGeneration = generation;
  marker.sharedRecord = n;
  pushLocked(marker);
  return false;
}

void Stream::close() {
  std::unique_lock<std::mutex> lock(mutex_);
  closed_.store(true);
  workCv_.notify_one();
  // Inline work in flight holds tickets the worker never sees; wait for all.
  doneWaiters_.fetch_add(1);
  doneCv_.wait(lock, [&] { return completed_.load() == submitted_.load(); });
  doneWaiters_.fetch_sub(1);
  std::thread worker = std::move(worker_);
  lock.unlock();
  if (worker.joinable()) worker.join();
}

}  // namespace openreg
