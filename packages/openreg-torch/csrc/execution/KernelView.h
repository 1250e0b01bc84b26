#pragma once

// Device tensors seen through the kernel view: a CPU tensor with the same sizes,
// strides, storage offset, dtype and conjugate/negative bits, whose storage aliases the
// device storage's read-write kernel mapping. CPU kernels run on it without any copy.

#include <ATen/core/Tensor.h>

#include "runtime/OpenRegMacros.h"

namespace at::native::openreg {

// The kernel-view alias of an openreg tensor (undefined stays undefined). A resizable
// alias may be grown by a kernel (out= arguments); its storage then allocates from
// `allocator` and the caller moves the new memory back into the device storage.
OPENREG_TORCH_API at::Tensor kernel_alias(const at::Tensor& device_tensor,
                                           c10::Allocator* allocator = nullptr);

// The kernel-view alias of an openreg tensor the kernel only reads or writes in place
// (never resizes): the same as kernel_alias(device_tensor), but an alias this thread
// made earlier for the same tensor is reused while it still describes it exactly and
// nothing else holds it. Each alias costs three heap objects (tensor, storage, version
// counter); a tensor used op after op (`a * b + a`) is aliased once. The reference is
// valid until this thread's next call.
OPENREG_TORCH_API const at::Tensor& input_kernel_alias(const at::Tensor& device_tensor);

// The kernel-view address of device memory.
OPENREG_TORCH_API void* kernel_pointer(const void* device_pointer);

} // namespace at::native::openreg
