#pragma once

// Running host code "on the device": a kernel is a callable run through orLaunchKernel,
// so it starts only after the work already issued on its stream and later work waits
// for it. Exceptions thrown by the kernel propagate to the caller.

#include <exception>
#include <utility>

#include "runtime/OpenRegException.h"
#include "runtime/OpenRegStream.h"

namespace c10::openreg {

// DOC START: kernel-launch
template <typename Kernel>
void launch_kernel(const OpenRegStream& stream, Kernel&& kernel) {
  struct Launch {
    Kernel* kernel;
    std::exception_ptr error;
  } launch{&kernel, nullptr};
  auto trampoline = [](void* data) {
    auto* self = static_cast<Launch*>(data);
    try {
      (*self->kernel)();
    } catch (...) {
      self->error = std::current_exception();
    }
  };
  OPENREG_CHECK(orLaunchKernel(stream.stream(), trampoline, &launch));
  if (launch.error) {
    std::rethrow_exception(launch.error);
  }
}
// DOC END: kernel-launch

} // namespace c10::openreg
