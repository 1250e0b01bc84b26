/*
 * openreg.h - the openreg device runtime, a simulated accelerator.
 *
 * A plain C API modelled name for name on the CUDA runtime (cudart): `or`
 * prefix, same argument order, same semantics where they make sense. See the
 * package README for the table mapping each call to its CUDA twin.
 *
 * Memory model. Each device owns an arena backed by one memory file that is
 * mapped twice: a *device view* mapped without any access rights, whose
 * addresses are what orMalloc returns (so a host dereference faults, as it
 * would for a GPU pointer), and a *kernel view* mapped read-write, used by the
 * runtime's own copies and by code that runs "on the device". Translating a
 * device address to its kernel address is one subtraction
 * (orGetKernelPointer). A host access to a device view ends the process with
 * a diagnostic naming the device and the allocation.
 *
 * Execution model. Every stream owns an ordered queue served by its own
 * worker thread; work issued on a stream (copies, memsets, event records,
 * host functions, kernels) runs in issue order. Stream 0 (NULL) is the
 * default stream of the current device.
 *
 * Environment:
 *   OPENREG_DEVICE_COUNT   number of devices (default 2, 0..OR_MAX_DEVICES)
 *   OPENREG_DEVICE_MEMORY  capacity of each device, e.g. "8GiB", "512MiB",
 *                          "1073741824" (default 8GiB)
 *   OPENREG_FAULT_FD       optional extra file descriptor that receives the
 *                          device-memory fault diagnostic (stderr always does)
 *   OPENREG_USAGE_DIR      where processes publish their device memory for
 *                          orGetProcessUsage / openreg-smi (default
 *                          /dev/shm/openreg-usage-<uid>)
 *
 * All calls are thread-safe. Every call returns orSuccess or a specific error
 * code; the thread's last error (and a detailed message naming the bad value
 * and the valid choices) is kept for orGetLastError/orGetLastErrorMessage.
 */
#ifndef OPENREG_OPENREG_H
#define OPENREG_OPENREG_H

#include <stddef.h>
#include <stdint.h>

#if defined(OPENREG_BUILDING_LIBRARY)
#define OR_API __attribute__((visibility("default")))
#else
#define OR_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define OPENREG_RUNTIME_VERSION 1000 /* 1.0: major * 1000 + minor * 10 */

/* The most devices OPENREG_DEVICE_COUNT may configure: code that keeps state per
 * device may size fixed tables by it. */
#define OR_MAX_DEVICES 64
/* Every orMalloc pointer is aligned to this many bytes, and every allocation
 * occupies a multiple of it (also orDeviceProp.memoryAlignment). */
#define OR_MEMORY_ALIGNMENT 512
/* An asynchronous copy or fill of at most this many bytes on an idle stream is
 * made on the calling thread before the call returns (see orMemcpyAsync). */
#define OR_INLINE_ASYNC_BYTES ((size_t)1 << 20)

/* ---------------------------------------------------------------- errors */

typedef enum orError {
  orSuccess = 0,
  /* An argument is out of range, NULL where it may not be, or inconsistent. */
  orErrorInvalidValue = 1,
  /* The device has not enough free memory for the request. */
  orErrorMemoryAllocation = 2,
  /* The runtime could not start (e.g. a malformed OPENREG_* variable, or the
   * arena could not be mapped). */
  orErrorInitializationError = 3,
  /* No device is configured (OPENREG_DEVICE_COUNT=0). */
  orErrorNoDevice = 100,
  /* The device index is not in [0, device count). */
  orErrorInvalidDevice = 101,
  /* The pointer is not a live allocation of the kind the call needs. */
  orErrorInvalidDevicePointer = 17,
  /* The copy kind does not match the pointers given. */
  orErrorInvalidMemcpyDirection = 21,
  /* A stream or event handle is unknown or was destroyed, or an event was
   * never recorded / was created without timing. */
  orErrorInvalidResourceHandle = 400,
  /* Work is still pending (orStreamQuery, orEventQuery, elapsed time). */
  orErrorNotReady = 600,
  /* The runtime was initialised in a parent process; a forked child cannot
   * use it (its device memory is not inherited). */
  orErrorForkedProcess = 700,
  /* The request is valid but not implemented by this runtime. */
  orErrorNotSupported = 801,
  /* IPC: this IPC handle is already open in this process (a handle opens
   * once per process; close it first, or share the pointer it returned). */
  orErrorAlreadyMapped = 208,
  /* IPC: the pointer is not one orIpcOpenMemHandle returned, or was closed. */
  orErrorNotMapped = 211,
  /* IPC: the bytes are not an IPC handle of the kind the call takes. */
  orErrorIpcInvalidHandle = 710,
  /* IPC: the process that created the handle has exited, or the process
   * with its id is an unrelated one (ids are reused); it cannot be reached. */
  orErrorIpcExporterGone = 711,
  /* IPC: the exporter freed the memory (or destroyed the event) the handle
   * names after creating the handle. */
  orErrorIpcHandleStale = 712
} orError_t;

/* A static string describing `error`, e.g. "invalid device ordinal". */
OR_API const char* orGetErrorString(orError_t error);
/* The enumerator's name, e.g. "orErrorInvalidDevice". */
OR_API const char* orGetErrorName(orError_t error);
/* The last error returned to this thread, and reset it to orSuccess. */
OR_API orError_t orGetLastError(void);
/* The last error returned to this thread, without resetting it. */
OR_API orError_t orPeekAtLastError(void);
/* A detailed message for the last error of this thread ("device index 5 is
 * out of range: 2 devices, valid indices 0..1"); "" when there is none. The
 * string is valid until the thread's next failing call. */
OR_API const char* orGetLastErrorMessage(void);

/* ---------------------------------------------------------------- devices */

typedef struct orDeviceProp {
  char name[256];           /* "openreg simulated device" */
  size_t totalGlobalMem;    /* capacity in bytes (OPENREG_DEVICE_MEMORY) */
  int multiProcessorCount;  /* host CPUs the kernels may use */
  int major;                /* runtime version */
  int minor;
  size_t memoryAlignment;   /* alignment of every orMalloc pointer */
} orDeviceProp;

/* Number of devices. Never fails once initialised; *count is 0 when none. */
OR_API orError_t orGetDeviceCount(int* count);
/* Number of devices, from the configuration alone: never initialises the
 * runtime (cf. NVML's nvmlDeviceGetCount), so a process that asks may still
 * fork children that use the device. The configuration is read once per
 * process, by this call or by initialisation, whichever comes first. In a
 * forked child it reports the configured count. orErrorInitializationError
 * when an OPENREG_* variable is malformed. */
OR_API orError_t orGetDeviceCountNoInit(int* count);
/* *inBadFork = 1 if this process was forked from one that had initialised
 * the runtime (every other call then fails with orErrorForkedProcess), else
 * 0. Never initialises. The runtime is the one owner of this state. */
OR_API orError_t orIsInBadFork(int* inBadFork);
/* Set the calling thread's current device. orErrorInvalidDevice when out of
 * range. */
OR_API orError_t orSetDevice(int device);
/* The calling thread's current device (0 until orSetDevice is called). */
OR_API orError_t orGetDevice(int* device);
/* Wait until all streams of the current device have finished their work. */
OR_API orError_t orDeviceSynchronize(void);
OR_API orError_t orGetDeviceProperties(orDeviceProp* prop, int device);
/* Free and total bytes of the current device. */
OR_API orError_t orMemGetInfo(size_t* free_bytes, size_t* total_bytes);
/* Stream priorities: lower numbers are higher priorities, as in CUDA. */
OR_API orError_t orDeviceGetStreamPriorityRange(int* leastPriority,
                                                int* greatestPriority);
OR_API orError_t orRuntimeGetVersion(int* version);

/* ---------------------------------------------------------------- memory */

typedef enum orMemcpyKind {
  orMemcpyHostToHost = 0,
  orMemcpyHostToDevice = 1,
  orMemcpyDeviceToHost = 2,
  orMemcpyDeviceToDevice = 3,
  orMemcpyDefault = 4 /* inferred from the pointers */
} orMemcpyKind;

typedef enum orMemoryType {
  orMemoryTypeUnregistered = 0, /* ordinary host memory */
  orMemoryTypeHost = 1,         /* pinned host memory from orMallocHost */
  orMemoryTypeDevice = 2        /* device memory from orMalloc */
} orMemoryType;

typedef struct orPointerAttributes {
  orMemoryType type;
  int device;          /* owning device, -1 for host memory */
  void* devicePointer; /* the pointer itself for device memory, else NULL */
  void* hostPointer;   /* the pointer itself for host memory, else NULL */
  void* base;          /* start of the allocation containing the pointer */
  size_t size;         /* size of that allocation in bytes */
} orPointerAttributes;

/* Allocate `size` bytes on the current device. size 0 yields *ptr == NULL.
 * orErrorMemoryAllocation when the device's free memory is insufficient. */
OR_API orError_t orMalloc(void** ptr, size_t size);
/* Free device memory from orMalloc. NULL is a no-op. Freeing anything else,
 * or twice, is orErrorInvalidDevicePointer. Waits for nothing: callers that
 * may still have queued work on the memory must synchronise first. */
OR_API orError_t orFree(void* ptr);
/* Page-locked ("pinned") host memory: ordinary host memory the runtime knows
 * about, so asynchronous copies from/to it truly run asynchronously. */
OR_API orError_t orMallocHost(void** ptr, size_t size);
OR_API orError_t orFreeHost(void* ptr);

/* Copies run in stream order on the current device's default stream
 * (orMemcpy) or on `stream` (orMemcpyAsync). The kind must match the
 * pointers (orErrorInvalidMemcpyDirection otherwise) and device ranges must
 * lie within one live allocation (orErrorInvalidValue otherwise).
 * orMemcpy returns after the copy is done. orMemcpyAsync returns at once when
 * the host side is pinned (or absent); with pageable host memory it returns
 * after the copy, as CUDA does. Like a kernel, an asynchronous copy or fill of
 * at most OR_INLINE_ASYNC_BYTES on an idle stream is made on the calling thread
 * before the call returns (no hand-off to the stream's worker). */
OR_API orError_t orMemcpy(void* dst, const void* src, size_t count,
                          orMemcpyKind kind);
typedef struct orStream* orStream_t;
OR_API orError_t orMemcpyAsync(void* dst, const void* src, size_t count,
                               orMemcpyKind kind, orStream_t stream);
/* Fill `count` bytes of device memory with the byte `value`. */
OR_API orError_t orMemset(void* devPtr, int value, size_t count);
OR_API orError_t orMemsetAsync(void* devPtr, int value, size_t count,
                               orStream_t stream);
OR_API orError_t orPointerGetAttributes(orPointerAttributes* attributes,
                                        const void* ptr);

/* ------------------------------------------------- the kernel view (device) */

/* Translate a device-view address into the kernel-view address code running
 * "on the device" may read and write. Any address inside a device's arena is
 * accepted (not only allocation starts); no lock is taken.
 * orErrorInvalidDevicePointer when `devPtr` is not device memory. */
OR_API orError_t orGetKernelPointer(void** kernelPtr, const void* devPtr);
/* The inverse: a kernel-view address back to its device-view address. */
OR_API orError_t orGetDevicePointer(void** devPtr, const void* kernelPtr);
/* The device whose device view contains `ptr`, or -1. Lock-free. */
OR_API int orDeviceOfPointer(const void* ptr);
/* The device whose kernel view contains `ptr`, or -1. Lock-free. */
OR_API int orDeviceOfKernelPointer(const void* ptr);
/* The two mappings of `device`'s own memory, for translating many addresses
 * without a call each: an address p in [*deviceView, *deviceView + *size)
 * has the kernel-view address *kernelView + (p - *deviceView). Both views stay
 * mapped for the life of the process once made; before the device's first
 * allocation all three are 0 (nothing to translate yet). Memory opened from
 * another process (orIpcOpenMemHandle) lies outside them: use
 * orGetKernelPointer for it. Never initialises. */
OR_API orError_t orDeviceGetMemoryViews(int device, void** deviceView,
                                        void** kernelView, size_t* size);

/* ---------------------------------------------------------------- streams */

/* Create a stream on the current device (default priority 0). */
OR_API orError_t orStreamCreate(orStream_t* stream);
/* `flags` is reserved (0); `priority` is clamped to the device's range. */
OR_API orError_t orStreamCreateWithPriority(orStream_t* stream,
                                            unsigned int flags, int priority);
/* Destroy a stream: pending work still completes, then the worker exits.
 * Later use of the handle is orErrorInvalidResourceHandle. */
OR_API orError_t orStreamDestroy(orStream_t stream);
/* orSuccess when all work issued so far has completed, else orErrorNotReady. */
OR_API orError_t orStreamQuery(orStream_t stream);
OR_API orError_t orStreamSynchronize(orStream_t stream);
OR_API orError_t orStreamGetPriority(orStream_t stream, int* priority);
OR_API orError_t orStreamGetDevice(orStream_t stream, int* device);
typedef struct orEvent* orEvent_t;
/* Work issued on `stream` after this call starts only once `event`'s
 * recorded work has completed. `flags` must be 0. An event never recorded
 * imposes no wait. */
OR_API orError_t orStreamWaitEvent(orStream_t stream, orEvent_t event,
                                   unsigned int flags);

typedef void (*orHostFn_t)(void* userData);
/* Enqueue `fn(userData)` on `stream`; it runs on the stream's worker thread
 * after all work issued before it, and later work waits for it. */
OR_API orError_t orLaunchHostFunc(orStream_t stream, orHostFn_t fn,
                                  void* userData);
/* Run a kernel `fn(userData)` in stream order on the *calling* thread: wait
 * until all earlier work on `stream` has completed, run `fn`, and only then
 * let the stream's later work start. Returns after `fn` returned. This is how
 * the PyTorch layer runs CPU kernels on device memory: their output shapes are
 * only known by running them, so a launch cannot be deferred. */
OR_API orError_t orLaunchKernel(orStream_t stream, orHostFn_t fn,
                                void* userData);

/* ---------------------------------------------------------------- events */

enum {
  orEventDefault = 0x0,
  orEventBlockingSync = 0x1, /* accepted; waits always block */
  orEventDisableTiming = 0x2,
  /* Shareable with other processes through orIpcGetEventHandle; requires
   * orEventDisableTiming, as in CUDA. */
  orEventInterprocess = 0x4
};

OR_API orError_t orEventCreate(orEvent_t* event);
OR_API orError_t orEventCreateWithFlags(orEvent_t* event, unsigned int flags);
OR_API orError_t orEventDestroy(orEvent_t event);
/* Capture the work issued on `stream` so far: the event completes when that
 * work has, and then holds the completion time. Re-recording replaces the
 * captured work. The event and stream must belong to the same device. */
OR_API orError_t orEventRecord(orEvent_t event, orStream_t stream);
/* orSuccess when the recorded work is done (or never recorded). */
OR_API orError_t orEventQuery(orEvent_t event);
OR_API orError_t orEventSynchronize(orEvent_t event);
/* Milliseconds between two completed events (microsecond resolution).
 * orErrorNotReady if either has not completed; orErrorInvalidResourceHandle
 * if either was never recorded or was created with orEventDisableTiming. */
OR_API orError_t orEventElapsedTime(float* ms, orEvent_t start, orEvent_t end);

/* ------------------------------------------------ interprocess sharing (IPC) */

/* Device memory and events can be shared with other processes of the same
 * user on this machine, as with cudaIpc*. A handle is 64 opaque bytes that can
 * be sent by any means (a pipe, a pickle); it names the exporting process, the
 * device and the allocation (or event).
 *
 * How it works: a device's memory is one memory file. The first handle a
 * process creates starts a small server thread listening on an abstract Unix
 * socket named after the process id and a random instance number (in the
 * handle). An importer connects to it, and the exporter answers with the
 * memory file (SCM_RIGHTS) after checking the allocation is still live; the
 * importer maps the exporter's whole device memory twice, like its own (a
 * PROT_NONE device view, a read-write kernel view), once per exporter and
 * device, registered so orGetKernelPointer, orPointerGetAttributes and copies
 * accept the imported addresses. The connection stays open while anything is
 * imported: the exporter counts each importer's opens and forgets them when
 * the importer closes them or exits. Processes must share the network
 * namespace (abstract sockets live there) and the user id.
 *
 * Every call that waits on another process gives up after 10 seconds with
 * orErrorIpcExporterGone, so a stopped or wedged exporter cannot hang it. */

#define OR_IPC_HANDLE_SIZE 64
typedef struct orIpcMemHandle_st {
  char reserved[OR_IPC_HANDLE_SIZE];
} orIpcMemHandle_t;
typedef struct orIpcEventHandle_st {
  char reserved[OR_IPC_HANDLE_SIZE];
} orIpcEventHandle_t;

enum {
  /* Accepted by orIpcOpenMemHandle for CUDA compatibility; no effect. */
  orIpcMemLazyEnablePeerAccess = 0x1
};

/* A handle for the allocation `devPtr` starts (the pointer orMalloc returned,
 * or one orIpcOpenMemHandle returned, which re-exports the original
 * exporter's allocation). Each call yields a distinct handle. A handle nobody
 * opened yet counts as "unopened" for orIpcGetMemRefCount until some process
 * opens it or the exporter discards it (orIpcDiscardMemHandle).
 * orErrorInvalidDevicePointer when `devPtr` is not such a pointer;
 * orErrorInitializationError if the socket cannot be created. */
OR_API orError_t orIpcGetMemHandle(orIpcMemHandle_t* handle, void* devPtr);
/* Map the memory named by `handle` into this process and return its
 * device-view address, on the device index the exporter used (which must
 * exist here). The memory stays valid until orIpcCloseMemHandle, even if the
 * exporter frees it or exits meanwhile: its pages are then freed on close.
 * Distinct handles of one allocation may each be opened; they return the same
 * address and each needs its own close. `flags`: 0 or
 * orIpcMemLazyEnablePeerAccess.
 * Errors: orErrorIpcInvalidHandle (not a memory handle),
 * orErrorInvalidValue (the handle was made by this very process: use the
 * original pointer), orErrorAlreadyMapped (this handle is already open here),
 * orErrorIpcExporterGone (the exporter exited, or its process id now belongs
 * to an unrelated process), orErrorIpcHandleStale (the exporter freed the
 * allocation), orErrorInvalidDevice (no such device here),
 * orErrorForkedProcess. */
OR_API orError_t orIpcOpenMemHandle(void** devPtr, orIpcMemHandle_t handle,
                                    unsigned int flags);
/* Undo one orIpcOpenMemHandle of `devPtr`. Waits for nothing: synchronise
 * work that uses the memory first. orErrorNotMapped when `devPtr` is not an
 * open IPC pointer (never opened, or already closed). */
OR_API orError_t orIpcCloseMemHandle(void* devPtr);
/* A handle for an event created with orEventInterprocess |
 * orEventDisableTiming (orErrorInvalidResourceHandle otherwise). */
OR_API orError_t orIpcGetEventHandle(orIpcEventHandle_t* handle, orEvent_t event);
/* An event of this process that shares the exporter's event: recording it
 * here or there, and waiting on it (orEventQuery, orEventSynchronize,
 * orStreamWaitEvent) anywhere, acts on the same shared state; a wait ends
 * when the latest record issued before it has completed (or a later one).
 * Destroy it with orEventDestroy. A wait whose recording process exits before
 * the recorded work completed ends within 0.1 s: orEventSynchronize returns
 * orErrorIpcExporterGone, a stream wait lets the stream go on. Errors as for
 * orIpcOpenMemHandle, with orErrorIpcHandleStale when the exporter destroyed
 * the event. An event handle may be opened any number of times. */
OR_API orError_t orIpcOpenEventHandle(orEvent_t* event, orIpcEventHandle_t handle);

/* No CUDA twin. For allocations this process exported (by orMalloc), the
 * number of opens other processes hold now and of handles created but not
 * opened or discarded yet; caching allocators must not reuse memory while
 * either is non-zero. Both are 0 for memory never exported.
 * orErrorInvalidDevicePointer when `devPtr` is not the start of a live
 * allocation of this process. */
OR_API orError_t orIpcGetMemRefCount(const void* devPtr, int* openCount,
                                     int* unopenedCount);
/* No CUDA twin. Forget a handle this process created that will never be
 * opened (it came back to its own exporter, or was never sent), so it no
 * longer counts as unopened. Discarding a handle already opened, or of
 * memory since freed, is a no-op. orErrorInvalidValue for a handle of another
 * process; orErrorIpcInvalidHandle for bytes that are not a memory handle. */
OR_API orError_t orIpcDiscardMemHandle(const orIpcMemHandle_t* handle);

/* ---------------------------------------------------------- diagnostics */

/* The device memory one process holds (NVML's process list, nvidia-smi). */
typedef struct orProcessUsage {
  int pid;
  int deviceCount;                   /* the process's OPENREG_DEVICE_COUNT */
  size_t deviceMemory;               /* and OPENREG_DEVICE_MEMORY (capacity) */
  size_t usedBytes[OR_MAX_DEVICES];  /* allocated from each device (orMalloc) */
} orProcessUsage;
/* No CUDA twin (nvmlDeviceGetComputeRunningProcesses). Every process that has
 * allocated device memory publishes, in a small file under OPENREG_USAGE_DIR,
 * what it holds; it is updated by orMalloc/orFree and removed at exit. Fills up
 * to `capacity` entries and sets *count to the number of live processes found
 * (call again with more room if it is larger). Files left by processes that
 * died are removed. Needs no initialised runtime. */
OR_API orError_t orGetProcessUsage(orProcessUsage* entries, int capacity, int* count);

/* (Re-)install the SIGSEGV/SIGBUS handler that diagnoses host accesses to
 * device memory. The runtime installs it when it initialises; call this again
 * after other code replaced it (Python's faulthandler, which pytest enables
 * late). Faults outside device memory go on to the handler it replaced. */
OR_API orError_t orInstallFaultHandler(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OPENREG_OPENREG_H */
