// The exporting side of IPC: one thread per exporting process answers
// importers on an abstract Unix socket, hands them memory files with
// SCM_RIGHTS and counts what each connection holds open, so a connection that
// ends (the importer closed everything, or died) releases its opens.
#include <poll.h>
#include <pthread.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "Device.h"
#include "Errors.h"
#include "Ipc.h"
#include "IpcEvent.h"
#include "Runtime.h"

namespace openreg {
namespace {

std::mutex g_serverMutex;
std::atomic<int> g_listenFd{-1};

struct Client {
  int fd = -1;
  pid_t pid = 0;
  // Opens held through this connection: (device, offset, serial) and
  // (slot, generation), each with its count.
  std::map<std::tuple<int, uint64_t, uint64_t>, int> memory;
  std::map<std::pair<uint32_t, uint32_t>, int> events;
};

// The thread's last error as a reply (and cleared, as it was handled).
void replyFromError(orError_t err, IpcReply* reply) {
  reply->status = int32_t(err);
  snprintf(reply->message, sizeof(reply->message), "%s", orGetLastErrorMessage());
  orGetLastError();
}

bool validDevice(int device, IpcReply* reply) {
  if (device >= 0 && device < deviceCount() && openreg::device(device).allocator.arenaFd() >= 0) {
    return true;
  }
  replyFromError(fail(orErrorIpcHandleStale,
                      "the exporting process has no memory on device %d to share",
                      device),
                 reply);
  return false;
}

// Fills `reply` (and *fd, a descriptor to pass along, or -1).
void handle(Client& c, const IpcRequest& rq, IpcReply* reply, int* fd) {
  *fd = -1;
  reply->status = orSuccess;
  switch (rq.op) {
    case kOpOpenMem: {
      if (!validDevice(rq.device, reply)) return;
      DeviceAllocator& a = device(rq.device).allocator;
      size_t size = 0;
      orError_t err = a.acquireImport(rq.offset, rq.serial, rq.ticket, &size);
      if (err != orSuccess) return replyFromError(err, reply);
      ++c.memory[{rq.device, rq.offset, rq.serial}];
      reply->size = size;
      reply->mapSize = a.arenaSize();
      if (rq.wantFd) *fd = a.arenaFd();
      return;
    }
    case kOpCloseMem: {
      auto it = c.memory.find({rq.device, rq.offset, rq.serial});
      if (it == c.memory.end()) return;  // nothing held: a no-op
      if (--it->second == 0) c.memory.erase(it);
      device(rq.device).allocator.releaseImport(rq.offset, rq.serial);
      return;
    }
    case kOpNewTicket: {
      if (!validDevice(rq.device, reply)) return;
      uint64_t ticket = 0;
      orError_t err = device(rq.device).allocator.issueTicket(rq.offset, rq.serial, &ticket);
      if (err != orSuccess) return replyFromError(err, reply);
      reply->ticket = ticket;
      return;
    }
    case kOpOpenEvent: {
      int eventDevice = -1;
      orError_t err = acquireEventImport(uint32_t(rq.offset), uint32_t(rq.serial), &eventDevice);
      if (err != orSuccess) return replyFromError(err, reply);
      ++c.events[{uint32_t(rq.offset), uint32_t(rq.serial)}];
      reply->mapSize = kSharedEventPoolSize;
      if (rq.wantFd) *fd = sharedEventPoolFd();
      return;
    }
    case kOpCloseEvent: {
      auto it = c.events.find({uint32_t(rq.offset), uint32_t(rq.serial)});
      if (it == c.events.end()) return;
      if (--it->second == 0) c.events.erase(it);
      releaseEventImport(uint32_t(rq.offset), uint32_t(rq.serial));
      return;
    }
  }
  replyFromError(fail(orErrorInvalidValue, "unknown IPC request %u", rq.op), reply);
}

// The connection ended: whatever it held open is released.
void dropClient(Client& c) {
  for (auto& [key, count] : c.memory) {
    auto [dev, offset, serial] = key;
    for (int i = 0; i < count; ++i) device(dev).allocator.releaseImport(offset, serial);
  }
  for (auto& [key, count] : c.events) {
    for (int i = 0; i < count; ++i) releaseEventImport(key.first, key.second);
  }
  close(c.fd);
}

bool sendReply(int fd, const IpcReply& reply, int passFd) {
  iovec iov{const_cast<IpcReply*>(&reply), sizeof(reply)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (passFd >= 0) {
    memset(control, 0, sizeof(control));
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &passFd, sizeof(int));
  }
  ssize_t n;
  do {
    n = sendmsg(fd, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == ssize_t(sizeof(reply));
}

void setTimeouts(int fd) {
  timeval tv{kIpcTimeoutSeconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

void acceptClient(int listenFd, std::vector<Client>& clients) {
  int fd = accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return;
  ucred cred{};
  socklen_t len = sizeof(cred);
  // Only the same user (or root) may map our memory, as ptrace rules would.
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
      (cred.uid != geteuid() && cred.uid != 0)) {
    close(fd);
    return;
  }
  setTimeouts(fd);
  Client c;
  c.fd = fd;
  c.pid = cred.pid;
  clients.push_back(std::move(c));
}

void serve(int listenFd) {
  pthread_setname_np(pthread_self(), "openreg-ipc");
  std::vector<Client> clients;
  std::vector<pollfd> fds;
  for (;;) {
    fds.clear();
    fds.push_back({listenFd, POLLIN, 0});
    for (const Client& c : clients) fds.push_back({c.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    // Clients first (indices stay valid), new connections last.
    for (size_t i = clients.size(); i-- > 0;) {
      short events = fds[i + 1].revents;
      if (events == 0) continue;
      Client& c = clients[i];
      IpcRequest rq{};
      ssize_t n;
      do {
        n = recv(c.fd, &rq, sizeof(rq), MSG_WAITALL);
      } while (n < 0 && errno == EINTR);
      bool ok = n == ssize_t(sizeof(rq));
      if (ok) {
        IpcReply reply{};
        int passFd = -1;
        handle(c, rq, &reply, &passFd);
        ok = sendReply(c.fd, reply, passFd);
      }
      if (!ok) {
        dropClient(c);
        clients.erase(clients.begin() + long(i));
      }
    }
    if (fds[0].revents & POLLIN) acceptClient(listenFd, clients);
  }
}

}  // namespace

uint64_t ipcNonce() {
  static const uint64_t nonce = [] {
    uint64_t n = 0;
    if (getrandom(&n, sizeof(n), 0) != ssize_t(sizeof(n))) {
      n = (uint64_t(getpid()) << 32) ^ uint64_t(time(nullptr)) ^ uint64_t(uintptr_t(&n));
    }
    return n == 0 ? 1 : n;
  }();
  return nonce;
}

size_t ipcSocketName(pid_t pid, uint64_t nonce, char* out, size_t capacity) {
  // Abstract namespace: a leading NUL, no file to clean up; the name goes
  // away with the last descriptor of the socket.
  int n = snprintf(out, capacity, "%copenreg-ipc-%d-%016llx", 0, int(pid),
                   static_cast<unsigned long long>(nonce));
  return size_t(n);
}

orError_t ensureIpcServer() {
  if (g_listenFd.load(std::memory_order_acquire) >= 0) return orSuccess;
  std::lock_guard<std::mutex> lock(g_serverMutex);
  if (g_listenFd.load(std::memory_order_relaxed) >= 0) return orSuccess;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  size_t len = ipcSocketName(getpid(), ipcNonce(), addr.sun_path, sizeof(addr.sun_path));
  socklen_t addrLen = socklen_t(offsetof(sockaddr_un, sun_path) + len);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), addrLen) != 0 ||
      listen(fd, 128) != 0) {
    int e = errno;
    if (fd >= 0) close(fd);
    return fail(orErrorInitializationError,
                "cannot create the IPC socket that serves this process's handles: %s",
                strerror(e));
  }
  try {
    std::thread(serve, fd).detach();
  } catch (const std::system_error& e) {
    close(fd);
    return fail(orErrorInitializationError, "cannot start the IPC server thread: %s",
                e.what());
  }
  g_listenFd.store(fd, std::memory_order_release);
  return orSuccess;
}

void closeIpcListenerAfterFork() {
  int fd = g_listenFd.exchange(-1);
  if (fd >= 0) close(fd);
}

}  // namespace openreg
