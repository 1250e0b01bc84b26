// The importing side of IPC: one connection and one set of mappings per
// exporting process ("peer"). A peer's device memory is mapped whole, twice
// (device and kernel view, as for our own devices), when the first of its
// allocations on that device is opened, and unmapped when the last is closed.
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "Arena.h"
#include "Env.h"
#include "Errors.h"
#include "Ipc.h"
#include "IpcEvent.h"
#include "Runtime.h"

namespace openreg {

struct PeerDevice {
  uintptr_t view = 0;
  uintptr_t kernel = 0;
  size_t size = 0;
  int slot = -1;  // import range slot
  int refs = 0;   // opens on this device, plus opens in progress
};

struct OpenAllocation {
  size_t size = 0;
  uint64_t serial = 0;
  std::vector<uint64_t> tickets;  // one per open (a handle opens once)
};

struct Peer {
  pid_t pid = 0;
  uint64_t nonce = 0;
  // One request at a time on the connection; guards sock, socketSlot, broken.
  std::mutex io;
  int sock = -1;
  int socketSlot = -1;
  bool broken = false;  // a reply timed out: the stream is out of step
  // Guarded by g_mutex.
  int refs = 0;  // opens and events held, plus calls in progress
  PeerDevice devices[OR_MAX_DEVICES];
  std::map<std::pair<int, uint64_t>, OpenAllocation> allocations;  // (device, offset)
};

namespace {

std::mutex g_mutex;
std::map<std::pair<pid_t, uint64_t>, Peer*> g_peers;
struct SlotOwner {
  Peer* peer = nullptr;
  int device = -1;
  uintptr_t view = 0;
};
SlotOwner g_slotOwners[kMaxImportRanges];
// Event pools of exporters, mapped once and never unmapped (256 KiB each):
// stream work may still wait on a slot after its event was destroyed.
std::map<std::pair<pid_t, uint64_t>, SharedEventState*> g_eventPools;

// Connected sockets (descriptor + 1; 0 is a free entry), so a forked child
// can close them without taking locks.
constexpr int kMaxSockets = 1024;
std::atomic<int> g_sockets[kMaxSockets];

int rememberSocket(int fd) {
  for (int i = 0; i < kMaxSockets; ++i) {
    int expected = 0;
    if (g_sockets[i].compare_exchange_strong(expected, fd + 1)) return i;
  }
  return -1;
}

void forgetSocket(int slot) {
  if (slot >= 0) g_sockets[slot].store(0);
}

Peer* pinLocked(pid_t pid, uint64_t nonce) {
  Peer*& p = g_peers[{pid, nonce}];
  if (p == nullptr) {
    p = new Peer;
    p->pid = pid;
    p->nonce = nonce;
  }
  ++p->refs;
  return p;
}

void unpinLocked(Peer* p) {
  if (--p->refs > 0) return;
  g_peers.erase({p->pid, p->nonce});
  // Nobody else holds it: no request can be in flight on its socket.
  if (p->sock >= 0) {
    forgetSocket(p->socketSlot);
    close(p->sock);
  }
  delete p;
}

bool processExists(pid_t pid) { return kill(pid, 0) == 0 || errno == EPERM; }

orError_t exporterGone(const Peer* p, const char* what) {
  if (!processExists(p->pid)) {
    return fail(orErrorIpcExporterGone,
                "the process that exported this handle (pid %d) has exited%s", int(p->pid),
                what);
  }
  return fail(orErrorIpcExporterGone,
              "process %d is not the process that exported this handle: the exporter "
              "exited and its process id was reused, or the handle is forged%s",
              int(p->pid), what);
}

// With p->io held.
orError_t connectLocked(Peer* p) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return fail(orErrorIpcExporterGone, "cannot create a socket to reach process %d: %s",
                int(p->pid), strerror(errno));
  }
  timeval tv{kIpcTimeoutSeconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  size_t len = ipcSocketName(p->pid, p->nonce, addr.sun_path, sizeof(addr.sun_path));
  int r;
  do {
    r = connect(fd, reinterpret_cast<sockaddr*>(&addr),
                socklen_t(offsetof(sockaddr_un, sun_path) + len));
  } while (r != 0 && errno == EINTR);
  ucred cred{};
  socklen_t credLen = sizeof(cred);
  if (r != 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &credLen) != 0 ||
      cred.pid != p->pid) {
    close(fd);
    return exporterGone(p, "");
  }
  p->sock = fd;
  p->socketSlot = rememberSocket(fd);
  return orSuccess;
}

// Send `rq` to the exporter and read its reply; *fd receives a descriptor
// that came with it (or -1). A failing reply status becomes the error.
orError_t roundTrip(Peer* p, const IpcRequest& rq, IpcReply* reply, int* fd) {
  *fd = -1;
  std::lock_guard<std::mutex> lock(p->io);
  if (p->broken) {
    return fail(orErrorIpcExporterGone,
                "process %d did not answer an earlier IPC request within %d s", int(p->pid),
                kIpcTimeoutSeconds);
  }
  if (p->sock < 0) OR_RETURN_IF_ERROR(connectLocked(p));
  ssize_t n;
  do {
    n = send(p->sock, &rq, sizeof(rq), MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  bool timedOut = false;
  if (n == ssize_t(sizeof(rq))) {
    iovec iov{reply, sizeof(*reply)};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    do {
      n = recvmsg(p->sock, &msg, MSG_WAITALL | MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    timedOut = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    cmsghdr* cm = n > 0 ? CMSG_FIRSTHDR(&msg) : nullptr;
    if (cm != nullptr && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
      memcpy(fd, CMSG_DATA(cm), sizeof(int));
    }
  } else {
    timedOut = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
  if (n != ssize_t(sizeof(*reply))) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
    if (timedOut) {
      // Keep the connection (closing it would release our opens there), but
      // never read from it again.
      p->broken = true;
      return fail(orErrorIpcExporterGone,
                  "process %d did not answer an IPC request within %d s (stopped or "
                  "busy?)",
                  int(p->pid), kIpcTimeoutSeconds);
    }
    forgetSocket(p->socketSlot);
    close(p->sock);
    p->sock = -1;
    return exporterGone(p, " (its connection closed)");
  }
  if (reply->status != orSuccess) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
    reply->message[sizeof(reply->message) - 1] = '\0';
    return fail(orError_t(reply->status), "%s", reply->message);
  }
  return orSuccess;
}

// With g_mutex held. Maps `fd` twice as peer device `d`.
orError_t mapDeviceLocked(Peer* p, int d, int fd, size_t size) {
  PeerDevice& pd = p->devices[d];
  void* view = mmap(nullptr, size, PROT_NONE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  void* kernel = view == MAP_FAILED ? MAP_FAILED
                                    : mmap(nullptr, size, PROT_READ | PROT_WRITE,
                                           MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (kernel == MAP_FAILED) {
    int e = errno;
    if (view != MAP_FAILED) munmap(view, size);
    return fail(orErrorMemoryAllocation,
                "mapping process %d's device %d memory (%zu bytes) twice failed: %s",
                int(p->pid), d, size, strerror(e));
  }
  madvise(view, size, MADV_DONTFORK);
  madvise(kernel, size, MADV_DONTFORK);
  int slot = publishImportRange(d, uintptr_t(view), uintptr_t(kernel), size);
  if (slot < 0) {
    munmap(view, size);
    munmap(kernel, size);
    return fail(orErrorMemoryAllocation,
                "too many imported device memories: at most %d (process, device) pairs "
                "may be open at once",
                kMaxImportRanges);
  }
  pd.view = uintptr_t(view);
  pd.kernel = uintptr_t(kernel);
  pd.size = size;
  pd.slot = slot;
  g_slotOwners[slot] = SlotOwner{p, d, uintptr_t(view)};
  return orSuccess;
}

// With g_mutex held: one reference of device `d` less.
void releaseDeviceLocked(Peer* p, int d) {
  PeerDevice& pd = p->devices[d];
  if (--pd.refs > 0 || pd.view == 0) return;
  retireImportRange(pd.slot);
  g_slotOwners[pd.slot] = SlotOwner{};
  munmap(reinterpret_cast<void*>(pd.view), pd.size);
  munmap(reinterpret_cast<void*>(pd.kernel), pd.size);
  pd = PeerDevice{};
}

bool isSelf(const IpcHandleData& h) {
  return h.pid == getpid() && h.nonce == ipcNonce();
}

orError_t selfHandle(const char* call) {
  return fail(orErrorInvalidValue,
              "%s: the handle was created by this very process; use the original "
              "pointer or event instead of opening it",
              call);
}

}  // namespace

orError_t importMemory(const IpcHandleData& h, void** ptr) {
  if (isSelf(h)) return selfHandle("orIpcOpenMemHandle");
  OR_RETURN_IF_ERROR(checkDeviceIndex(h.device));
  Peer* p;
  bool wantFd;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_peers.find({h.pid, h.nonce});
    if (it != g_peers.end()) {
      auto a = it->second->allocations.find({h.device, h.offset});
      if (a != it->second->allocations.end() && a->second.serial == h.serial) {
        const auto& t = a->second.tickets;
        if (std::find(t.begin(), t.end(), h.ticket) != t.end()) {
          return fail(orErrorAlreadyMapped,
                      "orIpcOpenMemHandle: this handle is already open in this process "
                      "(at %p); close it first or keep using that pointer",
                      reinterpret_cast<void*>(it->second->devices[h.device].view + h.offset));
        }
      }
    }
    p = pinLocked(h.pid, h.nonce);
    PeerDevice& pd = p->devices[h.device];
    ++pd.refs;  // keeps an existing mapping while we talk to the exporter
    wantFd = pd.view == 0;
  }
  IpcRequest rq{kOpOpenMem, h.device, h.offset, h.serial, h.ticket, wantFd ? 1u : 0u, 0};
  IpcReply reply{};
  int fd = -1;
  orError_t err = roundTrip(p, rq, &reply, &fd);
  bool granted = err == orSuccess;
  std::unique_lock<std::mutex> lock(g_mutex);
  PeerDevice& pd = p->devices[h.device];
  if (err == orSuccess && pd.view == 0) {
    err = fd >= 0 ? mapDeviceLocked(p, h.device, fd, reply.mapSize)
                  : fail(orErrorIpcExporterGone,
                         "process %d did not send its device memory", int(p->pid));
  }
  if (fd >= 0) close(fd);  // the mappings keep the memory file alive
  if (err == orSuccess && h.offset + reply.size > pd.size) {
    err = fail(orErrorIpcInvalidHandle,
               "orIpcOpenMemHandle: the handle's range (offset %llu, %llu bytes) lies "
               "outside process %d's device memory",
               static_cast<unsigned long long>(h.offset),
               static_cast<unsigned long long>(reply.size), int(p->pid));
  }
  if (err != orSuccess) {
    if (granted) {
      // Undo the exporter's count (best effort: a gone exporter counts nothing).
      IpcRequest undo{kOpCloseMem, h.device, h.offset, h.serial, 0, 0, 0};
      IpcReply ignored{};
      int ignoredFd = -1;
      std::string message = orGetLastErrorMessage();
      lock.unlock();
      roundTrip(p, undo, &ignored, &ignoredFd);
      lock.lock();
      fail(err, "%s", message.c_str());
    }
    releaseDeviceLocked(p, h.device);
    unpinLocked(p);
    return err;
  }
  OpenAllocation& a = p->allocations[{h.device, h.offset}];
  a.size = reply.size;
  a.serial = h.serial;
  a.tickets.push_back(h.ticket);
  *ptr = reinterpret_cast<void*>(pd.view + h.offset);
  return orSuccess;  // the pin and the device reference now belong to this open
}

orError_t closeImportedMemory(void* ptr) {
  uintptr_t p = uintptr_t(ptr);
  Peer* peer = nullptr;
  int d = -1;
  uint64_t offset = 0, serial = 0;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    uintptr_t view = 0;
    int slot = importSlotOfView(p, &view);
    const SlotOwner* owner = slot >= 0 ? &g_slotOwners[slot] : nullptr;
    if (owner != nullptr && owner->peer != nullptr && owner->view == view) {
      peer = owner->peer;
      d = owner->device;
      offset = p - view;
      auto it = peer->allocations.find({d, offset});
      if (it == peer->allocations.end()) {
        peer = nullptr;
      } else {
        serial = it->second.serial;
        it->second.tickets.pop_back();
        if (it->second.tickets.empty()) peer->allocations.erase(it);
      }
    }
  }
  if (peer == nullptr) {
    return fail(orErrorNotMapped,
                "orIpcCloseMemHandle: %p is not a pointer orIpcOpenMemHandle returned, or "
                "it was closed already",
                ptr);
  }
  IpcRequest rq{kOpCloseMem, d, offset, serial, 0, 0, 0};
  IpcReply reply{};
  int fd = -1;
  // A gone exporter holds nothing for us any more: closing still succeeds.
  if (roundTrip(peer, rq, &reply, &fd) != orSuccess) orGetLastError();
  std::lock_guard<std::mutex> lock(g_mutex);
  releaseDeviceLocked(peer, d);
  unpinLocked(peer);
  return orSuccess;
}

bool findImported(uintptr_t p, int* device, Allocation* out) {
  uintptr_t view = 0;
  int slot = importSlotOfView(p, &view);
  if (slot < 0) return false;
  std::lock_guard<std::mutex> lock(g_mutex);
  const SlotOwner& owner = g_slotOwners[slot];
  if (owner.peer == nullptr || owner.view != view) return false;
  uint64_t offset = p - view;
  auto& allocations = owner.peer->allocations;
  auto it = allocations.upper_bound({owner.device, offset});
  if (it == allocations.begin()) return false;
  --it;
  if (it->first.first != owner.device || offset - it->first.second >= it->second.size) {
    return false;
  }
  *device = owner.device;
  out->base = view + it->first.second;
  out->size = it->second.size;
  return true;
}

bool reexportImported(void* ptr, IpcHandleData* out, orError_t* err) {
  uintptr_t p = uintptr_t(ptr);
  Peer* peer = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    uintptr_t view = 0;
    int slot = importSlotOfView(p, &view);
    if (slot < 0) return false;
    const SlotOwner& owner = g_slotOwners[slot];
    if (owner.peer == nullptr || owner.view != view) return false;
    auto it = owner.peer->allocations.find({owner.device, p - view});
    if (it == owner.peer->allocations.end()) return false;
    peer = owner.peer;
    ++peer->refs;
    *out = IpcHandleData{kIpcMagic, kIpcVersion, kIpcMemKind, int32_t(peer->pid),
                         owner.device, peer->nonce, p - view, it->second.size,
                         it->second.serial, 0, 0};
  }
  IpcRequest rq{kOpNewTicket, out->device, out->offset, out->serial, 0, 0, 0};
  IpcReply reply{};
  int fd = -1;
  *err = roundTrip(peer, rq, &reply, &fd);
  out->ticket = reply.ticket;
  std::lock_guard<std::mutex> lock(g_mutex);
  unpinLocked(peer);
  return true;
}

orError_t importEvent(const IpcHandleData& h, SharedEventState** state, Peer** peer) {
  if (isSelf(h)) return selfHandle("orIpcOpenEventHandle");
  OR_RETURN_IF_ERROR(checkDeviceIndex(h.device));
  if (h.offset >= kSharedEventSlots) {
    return fail(orErrorIpcInvalidHandle, "orIpcOpenEventHandle: event slot %llu is out of range",
                static_cast<unsigned long long>(h.offset));
  }
  Peer* p;
  bool wantFd;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    p = pinLocked(h.pid, h.nonce);
    wantFd = g_eventPools.count({h.pid, h.nonce}) == 0;
  }
  IpcRequest rq{kOpOpenEvent, h.device, h.offset, h.serial, 0, wantFd ? 1u : 0u, 0};
  IpcReply reply{};
  int fd = -1;
  orError_t err = roundTrip(p, rq, &reply, &fd);
  std::lock_guard<std::mutex> lock(g_mutex);
  SharedEventState*& pool = g_eventPools[{h.pid, h.nonce}];
  if (err == orSuccess && pool == nullptr) {
    void* m = fd < 0 ? MAP_FAILED
                     : mmap(nullptr, kSharedEventPoolSize, PROT_READ | PROT_WRITE,
                            MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
      err = fail(orErrorIpcExporterGone,
                 "cannot map the interprocess events of process %d", int(p->pid));
    } else {
      madvise(m, kSharedEventPoolSize, MADV_DONTFORK);
      pool = static_cast<SharedEventState*>(m);
    }
  }
  if (fd >= 0) close(fd);
  if (err != orSuccess) {
    if (pool == nullptr) g_eventPools.erase({h.pid, h.nonce});
    unpinLocked(p);
    return err;
  }
  *state = pool + h.offset;
  *peer = p;  // the pin now belongs to the event
  return orSuccess;
}

void closeImportedEvent(Peer* peer, uint32_t slot, uint32_t generation) {
  IpcRequest rq{kOpCloseEvent, 0, slot, generation, 0, 0, 0};
  IpcReply reply{};
  int fd = -1;
  if (roundTrip(peer, rq, &reply, &fd) != orSuccess) orGetLastError();
  std::lock_guard<std::mutex> lock(g_mutex);
  unpinLocked(peer);
}

void ipcAfterForkChild() {
  closeIpcListenerAfterFork();
  for (auto& s : g_sockets) {
    int entry = s.exchange(0);
    if (entry > 0) close(entry - 1);
  }
}

}  // namespace openreg
