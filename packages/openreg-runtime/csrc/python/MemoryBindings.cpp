// Allocation, copies and pointer queries; pointers are Python ints.
#include "Check.h"

namespace openreg::python {
namespace {

void* ptr(uintptr_t p) { return reinterpret_cast<void*>(p); }
uintptr_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }
orStream_t stream(uintptr_t h) { return reinterpret_cast<orStream_t>(h); }

}  // namespace

void bindMemory(py::module_& m) {
  m.def("_malloc", [](size_t size) {
    void* p = nullptr;
    check(orMalloc(&p, size));
    return addr(p);
  });
  m.def("_free", [](uintptr_t p) { check(orFree(ptr(p))); });
  m.def("_malloc_host", [](size_t size) {
    void* p = nullptr;
    check(orMallocHost(&p, size));
    return addr(p);
  });
  m.def("_free_host", [](uintptr_t p) { check(orFreeHost(ptr(p))); });
  m.def("_memcpy", [](uintptr_t dst, uintptr_t src, size_t count, int kind) {
    callReleased([&] { return orMemcpy(ptr(dst), ptr(src), count, orMemcpyKind(kind)); });
  });
  m.def("_memcpy_async",
        [](uintptr_t dst, uintptr_t src, size_t count, int kind, uintptr_t s) {
          callReleased([&] {
            return orMemcpyAsync(ptr(dst), ptr(src), count, orMemcpyKind(kind), stream(s));
          });
        });
  m.def("_memset", [](uintptr_t p, int value, size_t count) {
    callReleased([&] { return orMemset(ptr(p), value, count); });
  });
  m.def("_memset_async", [](uintptr_t p, int value, size_t count, uintptr_t s) {
    callReleased([&] { return orMemsetAsync(ptr(p), value, count, stream(s)); });
  });
  m.def("_pointer_get_attributes", [](uintptr_t p) {
    orPointerAttributes a;
    check(orPointerGetAttributes(&a, ptr(p)));
    py::dict d;
    d["type"] = int(a.type);
    d["device"] = a.device;
    d["device_pointer"] = addr(a.devicePointer);
    d["host_pointer"] = addr(a.hostPointer);
    d["base"] = addr(a.base);
    d["size"] = a.size;
    return d;
  });
  m.def("_get_kernel_pointer", [](uintptr_t p) {
    void* k = nullptr;
    check(orGetKernelPointer(&k, ptr(p)));
    return addr(k);
  });
  m.def("_get_device_pointer", [](uintptr_t p) {
    void* d = nullptr;
    check(orGetDevicePointer(&d, ptr(p)));
    return addr(d);
  });
  m.def("_device_of_pointer", [](uintptr_t p) { return orDeviceOfPointer(ptr(p)); });
  m.def("_device_of_kernel_pointer",
        [](uintptr_t p) { return orDeviceOfKernelPointer(ptr(p)); });
  m.def("_device_memory_views", [](int device) {
    void* view = nullptr;
    void* kernel = nullptr;
    size_t size = 0;
    check(orDeviceGetMemoryViews(device, &view, &kernel, &size));
    return py::make_tuple(addr(view), addr(kernel), size);
  });
}

}  // namespace openreg::python
