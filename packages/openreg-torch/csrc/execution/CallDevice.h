#pragma once

// The device an operator call runs on, found from its arguments, rejecting the mixes a
// CUDA kernel rejects: tensors on two openreg devices, and CPU tensors that are not
// 0-dim scalars (index lists excepted, whose CPU tensors CUDA accepts too).

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <optional>
#include <string_view>

namespace at::native::openreg {

class CallDevice {
 public:
  explicit CallDevice(std::string_view op_name) : op_name_(op_name) {}

  // A tensor operand: an openreg tensor sets or must match the device; a CPU tensor
  // must be a 0-dim scalar (checked in device(), once the openreg device is known).
  void note_operand(const at::Tensor& tensor);
  // An element of an index list (Tensor?[]): CPU tensors of any shape are accepted.
  void note_index(const at::Tensor& tensor);
  // A device argument (factory functions): used when no openreg tensor decides.
  void note_device_argument(c10::Device device);
  // A generator argument: an openreg one with nothing else on openreg is refused.
  void note_generator(const at::Generator& generator);

  // The call's device (nullopt if nothing names one); throws on a rejected mix.
  std::optional<c10::Device> device() const;

 private:
  std::string_view op_name_;
  std::optional<c10::Device> tensor_device_;
  std::optional<c10::Device> argument_device_;
  bool openreg_generator_ = false;
  bool cpu_operand_with_dims_ = false;
};

} // namespace at::native::openreg
