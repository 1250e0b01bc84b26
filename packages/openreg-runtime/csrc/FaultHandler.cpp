// A host dereference of a device pointer hits a PROT_NONE device view. The
// handler names the device and allocation, then lets the fault kill the
// process as it would have anyway. Everything here is async-signal-safe:
// no malloc, no stdio, formatting by hand, output with write(2).
#include "FaultHandler.h"

#include <openreg/openreg.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "Arena.h"
#include "Device.h"
#include "Runtime.h"

namespace openreg {
namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS};
struct sigaction g_previous[2];
int g_extraFd = -1;  // OPENREG_FAULT_FD, for when stderr is redirected
std::mutex g_installMutex;

class Message {
 public:
  void text(const char* s) {
    while (*s != '\0' && len_ < sizeof(buf_)) buf_[len_++] = *s++;
  }
  void hex(uintptr_t v) {
    char digits[2 * sizeof(v)];
    int n = 0;
    do {
      digits[n++] = "0123456789abcdef"[v & 0xf];
      v >>= 4;
    } while (v != 0);
    text("0x");
    while (n > 0 && len_ < sizeof(buf_)) buf_[len_++] = digits[--n];
  }
  void dec(uint64_t v) {
    char digits[20];
    int n = 0;
    do {
      digits[n++] = char('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (n > 0 && len_ < sizeof(buf_)) buf_[len_++] = digits[--n];
  }
  void writeTo(int fd) const {
    size_t done = 0;
    while (done < len_) {
      ssize_t w = write(fd, buf_ + done, len_ - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return;
      done += size_t(w);
    }
  }

 private:
  char buf_[640];
  size_t len_ = 0;
};

int signalSlot(int sig) { return sig == SIGSEGV ? 0 : 1; }

void resetToDefault(int sig) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
}

void passOn(int sig, siginfo_t* info, void* context) {
  const struct sigaction& prev = g_previous[signalSlot(sig)];
  if ((prev.sa_flags & SA_SIGINFO) != 0 && prev.sa_sigaction != nullptr) {
    prev.sa_sigaction(sig, info, context);
    return;
  }
  if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
    prev.sa_handler(sig);
    return;
  }
  // Default action: returning re-executes the faulting access, which then
  // kills the process; a signal sent with kill() has to be raised again.
  resetToDefault(sig);
  if (info->si_code <= 0) raise(sig);
}

void describeFault(uintptr_t address, int device) {
  Message m;
  m.text("openreg: host code accessed device memory at ");
  m.hex(address);
  m.text(": device ");
  m.dec(uint64_t(device));
  Allocation a;
  bool gotLock = false;
  if (importSlotOfView(address, nullptr) >= 0) {
    m.text(", memory opened from another process (IPC)");
  } else if (openreg::device(device).allocator.tryFind(address, &a, &gotLock)) {
    m.text(", allocation ");
    m.hex(a.base);
    m.text(" (");
    m.dec(a.size);
    m.text(" bytes, offset ");
    m.dec(address - a.base);
    m.text(")");
  } else if (gotLock) {
    m.text(", outside any live allocation (freed memory?)");
  } else {
    m.text(" (allocation unknown: the allocator was busy)");
  }
  if (g_state.load(std::memory_order_relaxed) == kForked) {
    m.text(", in a forked child: device memory is not inherited across fork()");
  }
  m.text(". Device memory is only accessible to device kernels; copy it to the "
         "host first (tensor.cpu()).\n");
  m.writeTo(STDERR_FILENO);
  if (g_extraFd >= 0 && g_extraFd != STDERR_FILENO) m.writeTo(g_extraFd);
}

void onFault(int sig, siginfo_t* info, void* context) {
  int savedErrno = errno;
  uintptr_t address = uintptr_t(info->si_addr);
  int device = info->si_code > 0 ? deviceOfView(address) : -1;
  if (device < 0) {
    passOn(sig, info, context);
  } else {
    describeFault(address, device);
    resetToDefault(sig);
  }
  errno = savedErrno;
}

}  // namespace

void installFaultHandler() {
  std::lock_guard<std::mutex> lock(g_installMutex);
  if (const char* fd = getenv("OPENREG_FAULT_FD")) g_extraFd = atoi(fd);
  struct sigaction ours;
  memset(&ours, 0, sizeof(ours));
  ours.sa_sigaction = onFault;
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&ours.sa_mask);
  for (int sig : kSignals) {
    struct sigaction old;
    if (sigaction(sig, &ours, &old) != 0) continue;
    // Re-installing over ourselves must not make us our own predecessor.
    bool wasOurs = (old.sa_flags & SA_SIGINFO) != 0 && old.sa_sigaction == onFault;
    if (!wasOurs) g_previous[signalSlot(sig)] = old;
  }
}

}  // namespace openreg

extern "C" OR_API orError_t orInstallFaultHandler(void) {
  OR_ENTER();  // initialising installs it; a second install re-asserts it
  openreg::installFaultHandler();
  return orSuccess;
}
