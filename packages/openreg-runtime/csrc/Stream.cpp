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
  closed_ = false;
}

bool Stream::enqueue(WorkItem item) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return false;
  pushLocked(item);
  return true;
}

void Stream::pushLocked(WorkItem& item) {
  item.ticket = submitted_.load(std::memory_order_relaxed) + 1;
  submitted_.store(item.ticket, std::memory_order_release);
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
  std::unique_lock<std::mutex> lock(mutex_);
  if (closed_) return false;
  uint64_t t = submitted_.load(std::memory_order_relaxed) + 1;
  submitted_.store(t, std::memory_order_release);
  if (completed_.load(std::memory_order_relaxed) != t - 1) {
    ++doneWaiters_;
    doneCv_.wait(lock, [&] { return completed_.load(std::memory_order_relaxed) == t - 1; });
    --doneWaiters_;
  }
  *ticket = t;
  return true;
}

void Stream::endInline(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mutex_);
  completeLocked(ticket);
}

void Stream::completeLocked(uint64_t ticket) {
  completed_.store(ticket, std::memory_order_release);
  if (!queue_.empty()) workCv_.notify_one();
  if (doneWaiters_ != 0) doneCv_.notify_all();
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
      if (queue_.empty()) return closed_;
      return queue_.front().ticket == completed_.load(std::memory_order_relaxed) + 1;
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
  ++doneWaiters_;
  doneCv_.wait(lock, [&] { return completed_.load(std::memory_order_relaxed) >= ticket; });
  --doneWaiters_;
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
  uint64_t submitted = submitted_.load(std::memory_order_relaxed);
  *alreadyDone = completed_.load(std::memory_order_relaxed) == submitted;
  if (*alreadyDone || !timing || closed_) return submitted;
  WorkItem marker;
  marker.kind = WorkItem::kEventStamp;
  marker.event = event;
  marker.eventSeq = seq;
  pushLocked(marker);
  return marker.ticket;
}

bool Stream::recordShared(SharedEventState* state, uint32_t generation, uint64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t submitted = submitted_.load(std::memory_order_relaxed);
  if (completed_.load(std::memory_order_relaxed) == submitted || closed_) return true;
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
  closed_ = true;
  workCv_.notify_one();
  // Inline work in flight holds tickets the worker never sees; wait for all.
  ++doneWaiters_;
  doneCv_.wait(lock, [&] {
    return completed_.load(std::memory_order_relaxed) ==
           submitted_.load(std::memory_order_relaxed);
  });
  --doneWaiters_;
  std::thread worker = std::move(worker_);
  lock.unlock();
  if (worker.joinable()) worker.join();
}

}  // namespace openreg
