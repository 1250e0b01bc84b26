#pragma once

// Random number generators for openreg, after ATen/cuda/CUDAGeneratorImpl.h. Kernels
// run on the device as CPU kernels on device memory, and CPU kernels only accept CPU
// generators; so an openreg generator *wraps* a CPU generator. It reports an openreg
// device to PyTorch and hands the wrapped one to kernels, which makes the same seed
// produce exactly the numbers the CPU produces.

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

#include <optional>
#include <string_view>

#include "runtime/OpenRegMacros.h"

namespace c10::openreg {

// DOC START: generator-impl
class OPENREG_TORCH_API OpenRegGeneratorImpl final : public c10::GeneratorImpl {
 public:
  explicit OpenRegGeneratorImpl(DeviceIndex device_index);

  void set_current_seed(uint64_t seed) override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;
  static DeviceType device_type() { return DeviceType::PrivateUse1; }

  // The CPU generator that kernels draw from. Lock this generator's mutex_ while
  // a kernel uses it.
  const at::Generator& cpu_generator() const { return cpu_generator_; }

 private:
  OpenRegGeneratorImpl* clone_impl() const override;
  at::Generator cpu_generator_;
};
// DOC END: generator-impl

// DOC START: default-generator
// One default generator per device, created on first use.
OPENREG_TORCH_API const at::Generator& getDefaultOpenRegGenerator(DeviceIndex device_index = -1);
// DOC END: default-generator
OPENREG_TORCH_API at::Generator createOpenRegGenerator(DeviceIndex device_index = -1);

// The generator a CPU kernel of an openreg call on `device` draws from: the CPU generator
// that `generator` wraps, or the device's default generator's when the caller passed
// none. As on CUDA, a generator of another device type is an error, not silently used.
OPENREG_TORCH_API at::Generator kernel_generator(const std::optional<at::Generator>& generator,
                                                 DeviceIndex device, std::string_view op_name);

} // namespace c10::openreg
