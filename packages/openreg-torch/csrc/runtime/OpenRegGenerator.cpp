#include "runtime/OpenRegGenerator.h"

#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/TensorImpl.h>

#include <memory>
#include <mutex>
#include <vector>

#include "runtime/OpenRegFunctions.h"

namespace c10::openreg {

OpenRegGeneratorImpl::OpenRegGeneratorImpl(DeviceIndex device_index)
    : c10::GeneratorImpl(Device(DeviceType::PrivateUse1, device_index),
                         DispatchKeySet(DispatchKey::PrivateUse1)),
      cpu_generator_(at::detail::createCPUGenerator()) {}

void OpenRegGeneratorImpl::set_current_seed(uint64_t seed) {
  cpu_generator_.set_current_seed(seed);
}

uint64_t OpenRegGeneratorImpl::current_seed() const {
  return cpu_generator_.current_seed();
}

uint64_t OpenRegGeneratorImpl::seed() {
  return cpu_generator_.seed();
}

namespace {
// CUDA's Philox generator has an offset into its stream; the CPU's MT19937, which openreg
// draws from to give the CPU's numbers, has none. Said in openreg's terms: the wrapped
// generator's "CPU Generator does not use offset" names a generator the user never made.
constexpr const char* kNoOffset =
    "openreg's generator has no offset: it draws the CPU generator's numbers (MT19937, "
    "not Philox); use get_state()/set_state() to save and restore its position";
} // namespace

void OpenRegGeneratorImpl::set_offset(uint64_t /*offset*/) {
  TORCH_CHECK(false, kNoOffset);
}

uint64_t OpenRegGeneratorImpl::get_offset() const {
  TORCH_CHECK(false, kNoOffset);
}

void OpenRegGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  cpu_generator_.unsafeGetGeneratorImpl()->set_state(new_state);
}

c10::intrusive_ptr<c10::TensorImpl> OpenRegGeneratorImpl::get_state() const {
  return cpu_generator_.unsafeGetGeneratorImpl()->get_state();
}

OpenRegGeneratorImpl* OpenRegGeneratorImpl::clone_impl() const {
  auto* copy = new OpenRegGeneratorImpl(device().index());
  copy->cpu_generator_ = cpu_generator_.clone();
  return copy;
}

// DOC START: default-generator-impl
const at::Generator& getDefaultOpenRegGenerator(DeviceIndex device_index) {
  static std::once_flag created;
  static std::vector<at::Generator> generators;
  std::call_once(created, [] {
    for (DeviceIndex index = 0; index < device_count(); ++index) {
      generators.push_back(at::make_generator<OpenRegGeneratorImpl>(index));
      // Unseeded device generators start from a random seed, as CUDA's do.
      generators.back().set_current_seed(c10::detail::getNonDeterministicRandom());
    }
  });
  if (device_index < 0) {
    device_index = current_device();
  }
  check_device_index(device_index);
  return generators[device_index];
}
// DOC END: default-generator-impl

at::Generator createOpenRegGenerator(DeviceIndex device_index) {
  if (device_index < 0) {
    device_index = current_device();
  }
  check_device_index(device_index);
  return at::make_generator<OpenRegGeneratorImpl>(device_index);
}

at::Generator kernel_generator(const std::optional<at::Generator>& generator,
                               DeviceIndex device, std::string_view op_name) {
  const at::Generator& given =
      generator.has_value() && generator->defined() ? *generator
                                                    : getDefaultOpenRegGenerator(device);
  TORCH_CHECK(given.device().type() == c10::kPrivateUse1,
              "Expected a 'openreg' device type for generator but found '",
              given.device().type(), "' (in ", op_name, ")");
  return given.get<OpenRegGeneratorImpl>()->cpu_generator();
}

} // namespace c10::openreg
