#pragma once

// The TensorIterator adapter of the execution layer (after ATen's cuda/Loops.cuh):
// elementwise kernels that a TensorIterator drives, e.g. the kernels behind STUBs
// (REGISTER_PRIVATEUSE1_DISPATCH).
//
// The operands of a TensorIterator over openreg tensors hold *device* addresses: the
// host cannot read them (a host access faults, as with a GPU pointer). A kernel runs on
// the *kernel view* of the same memory instead, which sits at a fixed distance from the
// device view of each device (orGetKernelPointer). `launch_elementwise` finds that
// distance once per operand, then runs the iterator's loops, shifted into the kernel
// view, as one launch on the current stream of the iterator's device.

#include <ATen/TensorIterator.h>
#include <c10/util/FunctionRef.h>

#include <cstdint>
#include <string_view>

#include "runtime/OpenRegMacros.h"

namespace at::native::openreg {

// A TensorIterator inner loop over kernel-view addresses (see TensorIteratorBase::loop2d_t).
using KernelLoop2d =
    c10::function_ref<void(char** data, const int64_t* strides, int64_t size0, int64_t size1)>;

// Runs `loop` over every element of `iter` on its device, as kernel `name`, in stream order.
OPENREG_TORCH_API void launch_elementwise(TensorIteratorBase& iter, std::string_view name,
                                          KernelLoop2d loop);

// DOC START: kernel-view-launch
// Runs `kernel` as kernel `name` on the device of `iter` (whose operands are all openreg
// tensors of that device), in stream order, with the iterator's operands pointing into
// the kernel view while it runs: PyTorch's own CPU loops can then run over `iter`
// unchanged (CpuStubOnKernelView, aten/native/StructuredOnDevice.h). Afterwards they
// point at device memory again.
OPENREG_TORCH_API void launch_on_kernel_view(TensorIteratorBase& iter, std::string_view name,
                                             c10::function_ref<void()> kernel);

// Whether `iter` is the iterator of a launch_on_kernel_view running on this thread: the
// only iterator a CPU loop may be given in place of an openreg one.
OPENREG_TORCH_API bool on_kernel_view(const TensorIteratorBase& iter);

// Runs `kernel` as kernel `name` on the current stream of `device`, in stream order; its
// CPU allocations stay host memory (scratch). For kernels over kernel-view aliases
// (StructuredOnAliases, aten/native/StructuredOnDevice.h).
OPENREG_TORCH_API void launch_on_device(c10::Device device, std::string_view name,
                                        c10::function_ref<void()> kernel);
// DOC END: kernel-view-launch

// DOC START: unary-device-loop
// The 2-D loop of a unary operator out = op(in) (operand 0 is the output): a contiguous
// fast path the compiler vectorises, and a strided path for everything else.
template <typename out_t, typename in_t, typename Op>
void unary_loop2d(char** data, const int64_t* strides, int64_t size0, int64_t size1, Op op) {
  const int64_t out_step = strides[0], in_step = strides[1];
  for (int64_t outer = 0; outer < size1; ++outer) {
    char* out = data[0] + outer * strides[2];
    const char* in = data[1] + outer * strides[3];
    if (out_step == sizeof(out_t) && in_step == sizeof(in_t)) {
      auto* out_values = reinterpret_cast<out_t*>(out);
      const auto* in_values = reinterpret_cast<const in_t*>(in);
      for (int64_t i = 0; i < size0; ++i) {
        out_values[i] = op(in_values[i]);
      }
    } else {
      for (int64_t i = 0; i < size0; ++i) {
        *reinterpret_cast<out_t*>(out + i * out_step) =
            op(*reinterpret_cast<const in_t*>(in + i * in_step));
      }
    }
  }
}

// Runs out = op(in) elementwise over a unary iterator of scalar_t on the device.
template <typename scalar_t, typename Op>
void unary_device_kernel(TensorIteratorBase& iter, std::string_view name, Op op) {
  TORCH_INTERNAL_ASSERT(iter.ninputs() == 1 && iter.noutputs() == 1);
  launch_elementwise(iter, name, [op](char** data, const int64_t* strides, int64_t size0,
                                      int64_t size1) {
    unary_loop2d<scalar_t, scalar_t>(data, strides, size0, size1, op);
  });
}
// DOC END: unary-device-loop

} // namespace at::native::openreg
