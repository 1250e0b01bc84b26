#pragma once

#include <ATen/core/Tensor.h>

namespace at::native::openreg {

at::Tensor _copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking);
at::Tensor _copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst);

} // namespace at::native::openreg
