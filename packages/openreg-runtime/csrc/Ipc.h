// Interprocess sharing (cudaIpc*): what a handle holds, the exporter's server
// and the importer's side. The C entry points are in Ipc.cpp.
//
// Transport. The memory file is passed with SCM_RIGHTS over an abstract Unix
// socket served by a thread of the exporting process, not fetched with
// pidfd_getfd(2): that call needs ptrace rights over the exporter, which
// Yama (ptrace_scope=1, the default of several distributions) denies to a
// child reading its parent's files and container seccomp profiles often
// deny outright; it works on the development machine only because tests run
// as root without Yama. The socket also gives what pidfd cannot: the exporter
// answers for itself (a random instance number in the socket name tells a
// reused process id from the real exporter), validates the allocation, and
// sees an importer's death as the end of its connection, which is how opens
// held by a crashed process are released.
#pragma once

#include <openreg/openreg.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "DeviceAllocator.h"

namespace openreg {

struct SharedEventState;

// ------------------------------------------------------------------- handles

constexpr uint32_t kIpcMagic = 0x5049524f;  // "ORIP" in memory
constexpr uint16_t kIpcVersion = 1;
enum IpcKind : uint16_t { kIpcMemKind = 1, kIpcEventKind = 2 };

// The bytes of orIpcMemHandle_t / orIpcEventHandle_t.
struct IpcHandleData {
  uint32_t magic;
  uint16_t version;
  uint16_t kind;
  int32_t pid;       // exporter
  int32_t device;
  uint64_t nonce;    // exporter's instance number (names its socket)
  uint64_t offset;   // memory: offset in the device memory file; event: slot
  uint64_t size;     // memory: allocation size
  uint64_t serial;   // memory: allocation serial; event: slot generation
  uint64_t ticket;   // memory: this handle's ticket
  uint64_t reserved;
};
static_assert(sizeof(IpcHandleData) == OR_IPC_HANDLE_SIZE, "handle layout");

// This process's instance number (random, fixed for its lifetime).
uint64_t ipcNonce();
// Decode `bytes` as a handle of `kind`; orErrorIpcInvalidHandle otherwise.
orError_t decodeHandle(const void* bytes, IpcKind kind, const char* call,
                       IpcHandleData* out);

// ------------------------------------------------------------------ protocol

enum IpcOp : uint32_t {
  kOpOpenMem = 1,
  kOpCloseMem = 2,
  kOpNewTicket = 3,
  kOpOpenEvent = 4,
  kOpCloseEvent = 5,
};

struct IpcRequest {
  uint32_t op;
  int32_t device;
  uint64_t offset;  // memory offset, or event slot
  uint64_t serial;  // allocation serial, or event generation
  uint64_t ticket;
  uint32_t wantFd;  // the importer has not mapped this file yet
  uint32_t pad;
};

struct IpcReply {
  int32_t status;   // orError_t
  uint32_t hasFd;   // an SCM_RIGHTS descriptor came with the reply
  uint64_t size;    // allocation size
  uint64_t mapSize; // size of the file to map
  uint64_t ticket;  // kOpNewTicket
  char message[448];
};

// Replies from an exporter that do not come within this time count as the
// exporter being gone: a stopped exporter must not hang its importers.
constexpr int kIpcTimeoutSeconds = 10;

// The abstract socket name of process (pid, nonce); returns its length.
size_t ipcSocketName(pid_t pid, uint64_t nonce, char* out, size_t capacity);

// ------------------------------------------------------------ exporter side

// Start the server thread (once). orErrorInitializationError on failure.
orError_t ensureIpcServer();
// Part of ipcAfterForkChild.
void closeIpcListenerAfterFork();

// ------------------------------------------------------------ importer side

struct Peer;

// Map the allocation `h` names; *ptr receives its device-view address.
orError_t importMemory(const IpcHandleData& h, void** ptr);
// Undo one import of `ptr`; orErrorNotMapped when it is none.
orError_t closeImportedMemory(void* ptr);
// The imported allocation containing `p`, if any (interior pointers too).
bool findImported(uintptr_t p, int* device, Allocation* out);
// A handle (fresh ticket from the exporter) for the imported allocation
// starting at `ptr`. False when `ptr` is not the start of one.
bool reexportImported(void* ptr, IpcHandleData* out, orError_t* err);
// The shared state of the exporter's event `h`, pinning its peer.
orError_t importEvent(const IpcHandleData& h, SharedEventState** state, Peer** peer);
void closeImportedEvent(Peer* peer, uint32_t slot, uint32_t generation);

// In a child forked from this process: close the sockets (listening and
// connected), so that the child does not keep the parent's imports or
// exports alive. Async-signal-safe.
void ipcAfterForkChild();

}  // namespace openreg
