#pragma once

// One CPU kernel run on device data: the kernel-view aliases handed to it and how its
// results become device tensors again. Shared by the boxed zero-copy fallback and the
// direct (unboxed) kernels, so both honour the same rules:
//   - an input is seen through an alias of its kernel view (no copy);
//   - a result viewing an input becomes the same view of the device tensor;
//   - a fresh result lives in routed device memory and is adopted (no copy) when the
//     results alone hold it; several results sharing one storage share one device
//     storage; anything else (worker-thread allocations) is copied;
//   - an output the kernel resized (out=) gets the new memory and shape written back.
//
// Originals are held by pointer, never copied: copying a tensor Python holds makes
// PyTorch take the GIL to keep its Python object alive, which costs more than a kernel.

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/util/SmallVector.h>

#include <optional>
#include <string_view>

#include "aten/native/AllocationRouting.h"
#include "runtime/OpenRegKernelLaunch.h"
#include "runtime/OpenRegStream.h"

namespace at::native::openreg {

class AliasedCall {
 public:
  AliasedCall(c10::Device device, std::string_view op_name)
      : device_(device), op_name_(op_name) {}

  c10::Device device() const { return device_; }

  // The tensor the CPU kernel sees: an alias of an openreg tensor's kernel view; CPU
  // tensors (scalars, indices) as they are. `original` must outlive the call.
  at::Tensor alias(const at::Tensor& original);
  // The same for an output the kernel may resize (out=); see write_back().
  at::Tensor alias_output(const at::Tensor& original);

  // Runs `kernel` stream-ordered on the device, its CPU allocations routed to it. A
  // kernel without fresh results (in place) needs no routing: its scratch may stay in
  // host memory, which is cheaper to allocate than device memory.
  template <typename Kernel>
  void launch(Kernel&& kernel, bool route_allocations = true) {
    std::optional<RouteAllocationsToDevice> routing;
    if (route_allocations) {
      routing.emplace(device_.index());
    }
    c10::openreg::launch_kernel(c10::openreg::getCurrentOpenRegStream(device_.index()),
                                std::forward<Kernel>(kernel));
  }

  // Moves memory and shape of resized outputs back onto their device tensors.
  void write_back();

  // Results: count every result first, then map each with to_device().
  void count_result(const at::Tensor& result);
  at::Tensor to_device(const at::Tensor& result);

  // The openreg tensor whose alias is `alias` (nullptr if none): in-place returns.
  const at::Tensor* original_of(const at::Tensor& alias) const;

 private:
  struct Aliased {
    const at::Tensor* original;
    at::Tensor alias;
    bool output;
  };

  at::Tensor make_alias(const at::Tensor& original, bool output);
  const at::Tensor* original_over(const c10::StorageImpl* alias_storage) const;

  const c10::Device device_;
  const std::string_view op_name_;
  c10::SmallVector<Aliased, 4> aliased_;
  // A call touches a few storages: linear scans beat hashing (and allocating) here.
  c10::SmallVector<std::pair<const c10::StorageImpl*, c10::Storage>, 2> adopted_;
  c10::SmallVector<std::pair<const c10::StorageImpl*, size_t>, 2> result_references_;
};

} // namespace at::native::openreg
