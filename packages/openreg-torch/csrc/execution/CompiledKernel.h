#pragma once

// A kernel Inductor generated with its C++ CPU code generation, run on openreg memory:
// the openreg twin of a compiled CUDA kernel and its launcher. torch.compile's wrapper
// code calls it through openreg_torch._C._CompiledKernel (python/CompiledKernel.cpp).

#include <c10/core/Device.h>

#include <string>

#include "runtime/OpenRegMacros.h"

namespace at::native::openreg {

// DOC START: compiled-kernel
// One loaded kernel: the packed entry point openreg_torch._inductor appends to the
// generated source, `openreg_kernel_entry(void* const* args)`, which unpacks one address
// per argument (a kernel-view pointer, or where a scalar is stored) into the kernel's
// typed signature.
class OPENREG_TORCH_API CompiledKernel {
 public:
  using Entry = void (*)(void* const* args);

  // `library` must be loaded already (Inductor imported it): this takes a reference so
  // the entry stays valid while the kernel lives.
  CompiledKernel(std::string name, const std::string& library);
  CompiledKernel(const CompiledKernel&) = delete;
  CompiledKernel& operator=(const CompiledKernel&) = delete;
  ~CompiledKernel();

  // Runs the kernel through the launch point on the current stream of `device`, after
  // the stream's earlier work. `args` hold kernel-view addresses only: the host never
  // touches device memory.
  void launch(c10::DeviceIndex device, void* const* args) const;

  const std::string& name() const {
    return name_;
  }

 private:
  std::string name_;
  void* library_ = nullptr;
  Entry entry_ = nullptr;
};
// DOC END: compiled-kernel

} // namespace at::native::openreg
