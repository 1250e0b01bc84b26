#pragma once

// The C entry points Inductor's C++ wrapper for openreg (torch.compile with
// cpp_wrapper=True, AOTInductor) calls to run a compiled kernel: the twin of the
// launcher Python-wrapped kernels use (CompiledKernel.h), for generated C++ that
// cannot include openreg's headers or link against this library. The generated code
// finds these symbols in the already-loaded libopenreg_torch.so (dlopen RTLD_NOLOAD +
// dlsym) the first time it runs. Each returns nullptr on success, or an error message
// that stays valid on the calling thread until its next call.

#include <cstdint>

#include "runtime/OpenRegMacros.h"

// DOC START: compiled-kernel-c-api
extern "C" {

// `tensor` is an AtenTensorHandle (at::Tensor*). Stores the kernel-view address of its
// data in `*address`, never reading device memory: an openreg tensor's device address
// translated to the kernel view, a CPU tensor's own address. `*device` is the openreg
// device of the kernel's tensors so far (-1 none yet): it must match the tensor's, and
// becomes it. `kernel` and `argument` name the call in errors.
OPENREG_TORCH_API const char* openreg_kernel_argument_address(void* tensor, int32_t* device,
                                                              const char* kernel,
                                                              int32_t argument,
                                                              void** address);

// Runs `entry(args)` as the kernel named `kernel` on the current stream of openreg
// `device` (-1: the current device), after the stream's earlier work, through the
// launch point observers watch. Returns once the kernel has run.
OPENREG_TORCH_API const char* openreg_launch_kernel_entry(int32_t device, const char* kernel,
                                                          void (*entry)(void* const* args),
                                                          void* const* args);

} // extern "C"
// DOC END: compiled-kernel-c-api
