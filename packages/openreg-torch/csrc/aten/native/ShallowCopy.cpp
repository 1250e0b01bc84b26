#include "aten/native/ShallowCopy.h"

namespace at::native::openreg {

// DOC START: shallow-copy-type
// TensorImpl::has_compatible_shallow_copy_type lets dense tensors of CPU, CUDA, XPU...
// exchange their contents in place but leaves PrivateUse1 out, asking backends to
// answer this operator. Without it, Module.to("openreg") makes a new Parameter per
// use and tied weights (a language model's embedding and output layer) come apart;
// with it, openreg joins that dense family and modules move in place as on CUDA.
bool _has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  const c10::DispatchKeySet from_keys = from.key_set();
  if (self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from_keys)) {
    return true;
  }
  constexpr auto dense_backends = c10::DispatchKeySet(
      {c10::BackendComponent::CPUBit, c10::BackendComponent::CUDABit,
       c10::BackendComponent::MPSBit, c10::BackendComponent::HIPBit,
       c10::BackendComponent::XPUBit, c10::BackendComponent::HPUBit,
       c10::BackendComponent::MTIABit, c10::BackendComponent::PrivateUse1Bit});
  const auto is_dense = [&](c10::DispatchKeySet keys) {
    return keys.has_any(c10::DispatchKeySet(c10::DispatchKey::Dense)) &&
           keys.has_any(dense_backends);
  };
  return is_dense(self.key_set()) && is_dense(from_keys);
}
// DOC END: shallow-copy-type

} // namespace at::native::openreg
