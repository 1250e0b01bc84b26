#include "execution/CallDevice.h"

#include "runtime/OpenRegFunctions.h"

namespace at::native::openreg {

void CallDevice::note_operand(const at::Tensor& tensor) {
  if (!tensor.defined()) {
    return;
  }
  if (tensor.device().type() != c10::kPrivateUse1) {
    // CPU kernels accept 0-dim CPU scalars next to device tensors (as CUDA's do).
    cpu_operand_with_dims_ = cpu_operand_with_dims_ || tensor.dim() != 0;
    return;
  }
  note_index(tensor);
}

void CallDevice::note_index(const at::Tensor& tensor) {
  if (!tensor.defined() || tensor.device().type() != c10::kPrivateUse1) {
    return;
  }
  if (!tensor_device_.has_value()) {
    tensor_device_ = tensor.device();
    return;
  }
  TORCH_CHECK(*tensor_device_ == tensor.device(),
              "Expected all tensors to be on the same device, but found at least two devices, ",
              *tensor_device_, " and ", tensor.device(), "! (when checking arguments of ",
              op_name_, ")");
}

void CallDevice::note_device_argument(c10::Device device) {
  if (device.type() != c10::kPrivateUse1) {
    return;
  }
  // `device="openreg"` means the current device, as for every factory function: results
  // carry the index (a tensor on "openreg" with none matches no other tensor).
  argument_device_ = device.has_index()
      ? device
      : c10::Device(c10::kPrivateUse1, c10::openreg::current_device());
}

void CallDevice::note_generator(const at::Generator& generator) {
  openreg_generator_ = openreg_generator_ ||
                       (generator.defined() && generator.device().type() == c10::kPrivateUse1);
}

// DOC START: call-device
std::optional<c10::Device> CallDevice::device() const {
  if (!tensor_device_.has_value()) {
    // An openreg generator for CPU tensors: its key sent the call here. CUDA's kernels
    // hand such a call to the CPU's, which refuses the generator; so does openreg.
    TORCH_CHECK(argument_device_.has_value() || !openreg_generator_,
                "Expected a 'cpu' device type for generator but found '",
                c10::get_privateuse1_backend(), "' (in ", op_name_, ")");
    return argument_device_;
  }
  TORCH_CHECK(!cpu_operand_with_dims_,
              "Expected all tensors to be on the same device, but found at least two devices, ",
              *tensor_device_, " and cpu! (when checking arguments of ", op_name_,
              "; only 0-dim CPU tensors can be mixed with openreg tensors: move the others "
              "with .to('", *tensor_device_, "'))");
  return tensor_device_;
}
// DOC END: call-device

} // namespace at::native::openreg
