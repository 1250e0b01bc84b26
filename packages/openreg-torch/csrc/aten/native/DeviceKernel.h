#pragma once

// Writing an openreg kernel out of a CPU one: run the CPU computation on kernel views
// as a stream-ordered device kernel, with its allocations routed to device memory, and
// turn its fresh CPU results into device tensors (adopting their memory, not copying).

#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>

#include <tuple>
#include <utility>

#include "aten/native/AllocationRouting.h"
#include "runtime/OpenRegKernelLaunch.h"
#include "runtime/OpenRegStream.h"

namespace at::native::openreg {

// The device storage for a fresh CPU storage the kernel allocated, if its memory came
// from `device` and nothing but the `references` result tensors holds it.
std::optional<c10::Storage> adopt_storage(const c10::Storage& storage, size_t references,
                                          c10::Device device);

// A device tensor with `like`'s sizes, strides, offset, dtype and bits over `storage`.
at::Tensor device_tensor_over(c10::Storage storage, const at::Tensor& like);

// A fresh CPU result as a device tensor: adopted if possible, else copied.
at::Tensor to_device_result(const at::Tensor& result, c10::Device device);

inline std::tuple<at::Tensor, at::Tensor, at::Tensor> to_device_result(
    const std::tuple<at::Tensor, at::Tensor, at::Tensor>& results, c10::Device device) {
  return {to_device_result(std::get<0>(results), device),
          to_device_result(std::get<1>(results), device),
          to_device_result(std::get<2>(results), device)};
}

// DOC START: run-cpu-kernel
// Runs `kernel` (a callable building CPU results from kernel aliases) on `device`.
template <typename Kernel>
auto run_cpu_kernel(c10::Device device, Kernel&& kernel) {
  const c10::DeviceGuard guard(device);
  decltype(kernel()) results;
  {
    const RouteAllocationsToDevice routing(device.index());
    c10::openreg::launch_kernel(c10::openreg::getCurrentOpenRegStream(device.index()),
                                [&] { results = kernel(); });
  }
  return to_device_result(results, device);
}
// DOC END: run-cpu-kernel

} // namespace at::native::openreg
