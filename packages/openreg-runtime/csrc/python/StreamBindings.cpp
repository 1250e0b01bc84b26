// Streams, host functions and kernels. Python callables run on the stream's
// worker (host functions) or the calling thread (kernels); both take the GIL
// themselves, so every call that may wait on a worker releases it first.
#include <chrono>
#include <exception>
#include <memory>

#include "Check.h"

namespace openreg::python {
namespace {

orStream_t stream(uintptr_t h) { return reinterpret_cast<orStream_t>(h); }
uintptr_t handle(orStream_t s) { return reinterpret_cast<uintptr_t>(s); }

// Owns the callable until the worker has run it.
struct HostCall {
  py::object fn;
};

void runHostCall(void* data) {
  py::gil_scoped_acquire gil;
  std::unique_ptr<HostCall> call(static_cast<HostCall*>(data));
  try {
    call->fn();
  } catch (py::error_already_set& e) {
    // Nobody is waiting to receive it: report it like an exception in __del__.
    e.discard_as_unraisable("openreg host function");
  }
}

// A kernel runs synchronously; its exception goes back to the launcher.
struct KernelCall {
  py::object fn;
  std::exception_ptr error;
};

void runKernelCall(void* data) {
  auto* call = static_cast<KernelCall*>(data);
  py::gil_scoped_acquire gil;
  try {
    call->fn();
  } catch (...) {
    call->error = std::current_exception();
  }
}

void noop(void*) {}

}  // namespace

void bindStreams(py::module_& m) {
  m.def("_stream_create", [] {
    orStream_t s = nullptr;
    check(orStreamCreate(&s));
    return handle(s);
  });
  m.def("_stream_create_with_priority", [](unsigned flags, int priority) {
    orStream_t s = nullptr;
    check(orStreamCreateWithPriority(&s, flags, priority));
    return handle(s);
  });
  m.def("_stream_destroy",
        [](uintptr_t s) { callReleased([&] { return orStreamDestroy(stream(s)); }); });
  m.def("_stream_query", [](uintptr_t s) {
    orError_t err = orStreamQuery(stream(s));
    if (err == orErrorNotReady) {
      orGetLastError();
      return false;
    }
    check(err);
    return true;
  });
  m.def("_stream_synchronize",
        [](uintptr_t s) { callReleased([&] { return orStreamSynchronize(stream(s)); }); });
  m.def("_stream_get_priority", [](uintptr_t s) {
    int p = 0;
    check(orStreamGetPriority(stream(s), &p));
    return p;
  });
  m.def("_stream_get_device", [](uintptr_t s) {
    int d = 0;
    check(orStreamGetDevice(stream(s), &d));
    return d;
  });
  m.def(
      "_stream_wait_event",
      [](uintptr_t s, uintptr_t e, unsigned flags) {
        check(orStreamWaitEvent(stream(s), reinterpret_cast<orEvent_t>(e), flags));
      },
      py::arg("stream"), py::arg("event"), py::arg("flags") = 0);
  m.def("_launch_host_func", [](uintptr_t s, py::object fn) {
    auto* call = new HostCall{std::move(fn)};
    orError_t err = orLaunchHostFunc(stream(s), runHostCall, call);
    if (err != orSuccess) {
      delete call;
      raiseError(err);
    }
  });
  m.def("_launch_kernel", [](uintptr_t s, py::object fn) {
    KernelCall call{std::move(fn), nullptr};
    callReleased([&] { return orLaunchKernel(stream(s), runKernelCall, &call); });
    if (call.error) std::rethrow_exception(call.error);
  });
  // Mean cost in ns of orLaunchKernel with an empty kernel, GIL released:
  // the per-op overhead the PyTorch layer pays.
  m.def("_bench_launch_kernel", [](uintptr_t s, int iterations) {
    orError_t err = orSuccess;
    double ns = 0;
    {
      py::gil_scoped_release release;
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iterations && err == orSuccess; ++i) {
        err = orLaunchKernel(stream(s), noop, nullptr);
      }
      auto t1 = std::chrono::steady_clock::now();
      ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / iterations;
    }
    check(err);
    return ns;
  });
}

}  // namespace openreg::python
