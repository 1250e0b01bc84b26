#pragma once

// Running host code "on the device": a kernel is a callable run through orLaunchKernel,
// so it starts only after the work already issued on its stream and later work waits
// for it. Exceptions thrown by the kernel propagate to the caller.

#include <exception>
#include <utility>

#include "runtime/OpenRegException.h"
#include "runtime/OpenRegMacros.h"
#include "runtime/OpenRegStream.h"

namespace c10::openreg {

// The stream whose kernel this thread is running (nullptr outside kernels). Memory a
// kernel frees on its own stream may be reused by it at once (see the allocator).
OPENREG_TORCH_API orStream_t running_kernel_stream();

// Marks this thread as running a kernel of `stream` for the guard's lifetime.
class OPENREG_TORCH_API RunningKernel {
 public:
  explicit RunningKernel(orStream_t stream);
  ~RunningKernel();
  RunningKernel(const RunningKernel&) = delete;
  RunningKernel& operator=(const RunningKernel&) = delete;

 private:
  orStream_t previous_;
};

// DOC START: kernel-launch
template <typename Kernel>
void launch_kernel(const OpenRegStream& stream, Kernel&& kernel) {
  struct Launch {
    Kernel* kernel;
    orStream_t stream;
    std::exception_ptr error;
  } launch{&kernel, stream.stream(), nullptr};
  auto trampoline = [](void* data) {
    auto* self = static_cast<Launch*>(data);
    try {
      const RunningKernel running(self->stream);
      (*self->kernel)();
    } catch (...) {
      self->error = std::current_exception();
    }
  };
  OPENREG_CHECK(orLaunchKernel(launch.stream, trampoline, &launch));
  if (launch.error) {
    std::rethrow_exception(launch.error);
  }
}
// DOC END: kernel-launch

} // namespace c10::openreg
