#include "aten/native/Fallback.h"

#include <ATen/native/CPUFallback.h>
#include <c10/core/DeviceGuard.h>

#include "runtime/OpenRegGenerator.h"

namespace at::native::openreg {
namespace {

void note_device(const at::Tensor& tensor, const c10::OperatorHandle& op,
                 std::optional<c10::Device>& device) {
  if (!tensor.defined() || tensor.device().type() != c10::kPrivateUse1) {
    return;
  }
  if (!device.has_value()) {
    device = tensor.device();
    return;
  }
  TORCH_CHECK(*device == tensor.device(),
              "Expected all tensors to be on the same device, but found at least two devices, ",
              *device, " and ", tensor.device(), "! (when checking arguments of ",
              op.schema().name(), ")");
}

// The device an operator runs on: that of its openreg tensors, or of a device argument
// (factory functions), checking that all of them agree.
std::optional<c10::Device> find_device(const c10::OperatorHandle& op,
                                       const torch::jit::Stack& arguments_end_at,
                                       size_t first) {
  std::optional<c10::Device> device;
  for (size_t index = first; index < arguments_end_at.size(); ++index) {
    const c10::IValue& value = arguments_end_at[index];
    if (value.isTensor()) {
      note_device(value.toTensor(), op, device);
    } else if (value.isTensorList()) {
      for (const at::Tensor& tensor : value.toTensorList()) {
        note_device(tensor, op, device);
      }
    } else if (value.isList()) {
      for (const c10::IValue& element : value.toListRef()) {
        if (element.isTensor()) {
          note_device(element.toTensor(), op, device);
        }
      }
    }
  }
  if (!device.has_value()) {
    for (size_t index = first; index < arguments_end_at.size(); ++index) {
      const c10::IValue& value = arguments_end_at[index];
      if (value.isDevice() && value.toDevice().type() == c10::kPrivateUse1) {
        device = value.toDevice();
      }
    }
  }
  return device;
}

// DOC START: generator-substitution
// CPU kernels only accept CPU generators: hand them the one an openreg generator wraps,
// and the device's default generator's when the caller passed none.
void substitute_generators(const c10::OperatorHandle& op, torch::jit::Stack* stack,
                           size_t first, std::optional<c10::Device> device) {
  const auto& arguments = op.schema().arguments();
  for (size_t index = 0; index < arguments.size(); ++index) {
    const auto& type = arguments[index].type();
    const bool is_generator = type->kind() == c10::TypeKind::OptionalType
        ? type->castRaw<c10::OptionalType>()->getElementType()->kind() ==
              c10::TypeKind::GeneratorType
        : type->kind() == c10::TypeKind::GeneratorType;
    if (!is_generator) {
      continue;
    }
    c10::IValue& value = (*stack)[first + index];
    at::Generator generator;
    if (value.isGenerator()) {
      generator = value.toGenerator();
    } else if (device.has_value()) {
      generator = c10::openreg::getDefaultOpenRegGenerator(device->index());
    } else {
      continue;
    }
    // As CUDA does, a generator of another device is an error, not silently used.
    TORCH_CHECK(generator.device().type() == c10::kPrivateUse1,
                "Expected a 'openreg' device type for generator but found '",
                generator.device().type(), "' (in ", op.schema().name(), ")");
    value = generator.get<c10::openreg::OpenRegGeneratorImpl>()->cpu_generator();
  }
}
// DOC END: generator-substitution

} // namespace

std::optional<c10::Device> prepare_stack(const c10::OperatorHandle& op,
                                         torch::jit::Stack* stack) {
  const size_t count = op.schema().arguments().size();
  const size_t first = stack->size() - count;
  const std::optional<c10::Device> device = find_device(op, *stack, first);
  substitute_generators(op, stack, first, device);
  return device;
}

// DOC START: cpu-copy-fallback
void cpu_copy_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const std::optional<c10::Device> device = prepare_stack(op, stack);
  const c10::OptionalDeviceGuard guard(device);
  at::native::cpu_fallback(op, stack, /*error_on_views=*/false);
}
// DOC END: cpu-copy-fallback

} // namespace at::native::openreg
