// Copies and fills (cudaMemcpy, cudaMemcpyAsync, cudaMemset, ...). Pointers
// are classified and validated at issue time; the bytes move through the
// kernel view, in stream order.
#include <cstring>

#include "Arena.h"
#include "Device.h"
#include "Errors.h"
#include "HostAllocator.h"
#include "Runtime.h"
#include "Stream.h"

namespace openreg {
namespace {

struct Endpoint {
  enum Kind { kPageable, kPinned, kDevice } kind = kPageable;
  int device = -1;
  void* address = nullptr;  // what the copy touches: kernel view for devices
};

const char* describe(const Endpoint& e) {
  switch (e.kind) {
    case Endpoint::kDevice: return "device memory";
    case Endpoint::kPinned: return "pinned host memory";
    case Endpoint::kPageable: break;
  }
  return "host memory";
}

// Classify `p` and check that [p, p + count) stays inside one allocation
// when it is device (or pinned) memory.
orError_t classify(const char* call, const char* role, const void* ptr, size_t count,
                   Endpoint* out) {
  uintptr_t p = uintptr_t(ptr);
  int d = deviceOfView(p);
  if (d >= 0) {
    Allocation a;
    if (!findAllocation(d, p, &a)) {
      return fail(orErrorInvalidValue,
                  "%s: %s %p lies in device %d's memory but not inside a live "
                  "allocation (freed?)",
                  call, role, ptr, d);
    }
    size_t offset = p - a.base;
    if (count > a.size - offset) {
      return fail(orErrorInvalidValue,
                  "%s: %s range of %zu bytes at %p runs past the end of its "
                  "allocation (0x%zx, %zu bytes, offset %zu leaves %zu bytes) on "
                  "device %d",
                  call, role, count, ptr, size_t(a.base), a.size, offset,
                  a.size - offset, d);
    }
    out->kind = Endpoint::kDevice;
    out->device = d;
    out->address = viewToKernel(p);
    return orSuccess;
  }
  HostRange h;
  if (findPinned(p, &h)) {
    size_t offset = p - h.base;
    if (count > h.size - offset) {
      return fail(orErrorInvalidValue,
                  "%s: %s range of %zu bytes at %p runs past the end of its pinned "
                  "allocation (0x%zx, %zu bytes)",
                  call, role, count, ptr, size_t(h.base), h.size);
    }
    out->kind = Endpoint::kPinned;
  } else {
    out->kind = Endpoint::kPageable;
  }
  out->address = const_cast<void*>(ptr);
  return orSuccess;
}

const char* kindName(int kind) {
  switch (kind) {
    case orMemcpyHostToHost: return "orMemcpyHostToHost";
    case orMemcpyHostToDevice: return "orMemcpyHostToDevice";
    case orMemcpyDeviceToHost: return "orMemcpyDeviceToHost";
    case orMemcpyDeviceToDevice: return "orMemcpyDeviceToDevice";
    case orMemcpyDefault: return "orMemcpyDefault";
  }
  return "?";
}

orError_t checkKind(const char* call, orMemcpyKind kind) {
  if (kind < orMemcpyHostToHost || kind > orMemcpyDefault) {
    return fail(orErrorInvalidMemcpyDirection,
                "%s: unknown copy kind %d (valid: 0 HostToHost, 1 HostToDevice, 2 "
                "DeviceToHost, 3 DeviceToDevice, 4 Default)",
                call, int(kind));
  }
  return orSuccess;
}

// Validate a copy and resolve both endpoints.
orError_t planCopy(const char* call, void* dst, const void* src, size_t count,
                   orMemcpyKind kind, Endpoint* d, Endpoint* s) {
  if (dst == nullptr || src == nullptr) {
    return fail(orErrorInvalidValue, "%s: %s is NULL", call, dst == nullptr ? "dst" : "src");
  }
  OR_RETURN_IF_ERROR(classify(call, "dst", dst, count, d));
  OR_RETURN_IF_ERROR(classify(call, "src", src, count, s));
  bool srcDevice = s->kind == Endpoint::kDevice;
  bool dstDevice = d->kind == Endpoint::kDevice;
  bool ok = true;
  switch (kind) {
    case orMemcpyHostToHost: ok = !srcDevice && !dstDevice; break;
    case orMemcpyHostToDevice: ok = !srcDevice && dstDevice; break;
    case orMemcpyDeviceToHost: ok = srcDevice && !dstDevice; break;
    case orMemcpyDeviceToDevice: ok = srcDevice && dstDevice; break;
    case orMemcpyDefault: break;
  }
  if (!ok) {
    int inferred = srcDevice ? (dstDevice ? orMemcpyDeviceToDevice : orMemcpyDeviceToHost)
                             : (dstDevice ? orMemcpyHostToDevice : orMemcpyHostToHost);
    return fail(orErrorInvalidMemcpyDirection,
                "%s: kind %s does not match the pointers: src %p is %s, dst %p is %s "
                "(use %s or orMemcpyDefault)",
                call, kindName(kind), src, describe(*s), dst, describe(*d),
                kindName(inferred));
  }
  return orSuccess;
}

orError_t planFill(const char* call, void* ptr, size_t count, Endpoint* e) {
  if (ptr == nullptr) return fail(orErrorInvalidValue, "%s: devPtr is NULL", call);
  OR_RETURN_IF_ERROR(classify(call, "devPtr", ptr, count, e));
  if (e->kind != Endpoint::kDevice) {
    return fail(orErrorInvalidDevicePointer, "%s: %p is %s, not device memory", call,
                ptr, describe(*e));
  }
  return orSuccess;
}

orError_t closedStream(orStream_t stream) {
  return fail(orErrorInvalidResourceHandle,
              "stream %p was destroyed while this call was being issued",
              static_cast<void*>(stream));
}

// DOC START: inline-async
// Asynchronous copies and fills up to this size run on the calling thread when their
// stream is idle, as kernels do. Handing them to the stream's worker costs two thread
// switches (tens of microseconds, far more on a busy machine), and the caller usually
// reads the result right away (`batch.to(device, non_blocking=True)` then the forward),
// so only a copy long enough to overlap with other host work gains from the worker:
// 1 MiB takes about 100 us at host memcpy speed. Stream order, events and the pinned
// allocator's reuse rules are the same either way.
constexpr size_t kInlineAsyncBytes = OR_INLINE_ASYNC_BYTES;

bool runsInline(Stream* stream, size_t count) {
  return count <= kInlineAsyncBytes && stream->idle();
}
// DOC END: inline-async

// Synchronous calls use the current device's default stream.
orError_t currentDefaultStream(Stream** s) {
  OR_RETURN_IF_ERROR(checkDeviceIndex(t_currentDevice));
  *s = defaultStream(t_currentDevice);
  return orSuccess;
}

}  // namespace
}  // namespace openreg

using namespace openreg;

extern "C" {

// DOC START: orMemcpy
OR_API orError_t orMemcpy(void* dst, const void* src, size_t count, orMemcpyKind kind) {
  OR_ENTER();
  OR_RETURN_IF_ERROR(checkKind("orMemcpy", kind));
  if (count == 0) return orSuccess;
  Endpoint d, s;
  OR_RETURN_IF_ERROR(planCopy("orMemcpy", dst, src, count, kind, &d, &s));
  Stream* stream;
  OR_RETURN_IF_ERROR(currentDefaultStream(&stream));
  // In stream order, but on the calling thread: when the default stream is
  // idle this costs two uncontended locks and no thread hand-off.
  stream->runInline([&] { memmove(d.address, s.address, count); });
  return orSuccess;
}
// DOC END: orMemcpy

OR_API orError_t orMemcpyAsync(void* dst, const void* src, size_t count,
                               orMemcpyKind kind, orStream_t streamHandle) {
  OR_ENTER();
  OR_RETURN_IF_ERROR(checkKind("orMemcpyAsync", kind));
  Stream* stream;
  OR_RETURN_IF_ERROR(resolveStream(streamHandle, &stream));
  if (count == 0) return orSuccess;
  Endpoint d, s;
  OR_RETURN_IF_ERROR(planCopy("orMemcpyAsync", dst, src, count, kind, &d, &s));
  bool pageable = d.kind == Endpoint::kPageable || s.kind == Endpoint::kPageable;
  // Pageable memory may be reused as soon as we return (CUDA stages it for the same
  // reason), so that copy is made now, still in stream order.
  if (pageable || runsInline(stream, count)) {
    if (!stream->runInline([&] { memmove(d.address, s.address, count); })) {
      return closedStream(streamHandle);
    }
    return orSuccess;
  }
  WorkItem item;
  item.kind = WorkItem::kCopy;
  item.dst = d.address;
  item.src = s.address;
  item.count = count;
  if (!stream->enqueue(item)) return closedStream(streamHandle);
  return orSuccess;
}

OR_API orError_t orMemset(void* devPtr, int value, size_t count) {
  OR_ENTER();
  if (count == 0) return orSuccess;
  Endpoint e;
  OR_RETURN_IF_ERROR(planFill("orMemset", devPtr, count, &e));
  Stream* stream;
  OR_RETURN_IF_ERROR(currentDefaultStream(&stream));
  stream->runInline([&] { memset(e.address, value, count); });
  return orSuccess;
}

OR_API orError_t orMemsetAsync(void* devPtr, int value, size_t count,
                               orStream_t streamHandle) {
  OR_ENTER();
  Stream* stream;
  OR_RETURN_IF_ERROR(resolveStream(streamHandle, &stream));
  if (count == 0) return orSuccess;
  Endpoint e;
  OR_RETURN_IF_ERROR(planFill("orMemsetAsync", devPtr, count, &e));
  if (runsInline(stream, count)) {
    if (!stream->runInline([&] { memset(e.address, value, count); })) {
      return closedStream(streamHandle);
    }
    return orSuccess;
  }
  WorkItem item;
  item.kind = WorkItem::kMemset;
  item.dst = e.address;
  item.value = value;
  item.count = count;
  if (!stream->enqueue(item)) return closedStream(streamHandle);
  return orSuccess;
}

}  // extern "C"
