#pragma once

// Whether one tensor may take over another's storage and metadata in place
// (`param.data = other`, Module._apply): PyTorch's answer for PrivateUse1 is "no".

#include <ATen/core/Tensor.h>

namespace at::native::openreg {

bool _has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from);

} // namespace at::native::openreg
