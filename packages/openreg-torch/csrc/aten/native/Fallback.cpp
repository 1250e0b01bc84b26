#include "aten/native/Fallback.h"

#include <ATen/native/CPUFallback.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string_view>

#include "aten/native/CallDevice.h"
#include "runtime/OpenRegGenerator.h"

namespace at::native::openreg {
namespace {

// The device an operator runs on: that of its openreg tensors, or of a device argument
// (factory functions), rejecting the mixes CUDA rejects (see CallDevice).
std::optional<c10::Device> find_device(const c10::OperatorHandle& op,
                                       const torch::jit::Stack& arguments_end_at,
                                       size_t first) {
  CallDevice device(op.schema().name());
  for (size_t index = first; index < arguments_end_at.size(); ++index) {
    const c10::IValue& value = arguments_end_at[index];
    if (value.isTensor()) {
      device.note_operand(value.toTensor());
    } else if (value.isTensorList()) {
      for (const at::Tensor& tensor : value.toTensorList()) {
        device.note_operand(tensor);
      }
    } else if (value.isList()) {  // Tensor?[] indices
      for (const c10::IValue& element : value.toListRef()) {
        if (element.isTensor()) {
          device.note_index(element.toTensor());
        }
      }
    } else if (value.isDevice()) {
      device.note_device_argument(value.toDevice());
    }
  }
  return device.device();
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

FallbackMode fallback_mode() {
  static const FallbackMode mode = [] {
    const char* value = std::getenv("OPENREG_FALLBACK");
    const std::string_view name = value == nullptr ? "zero-copy" : value;
    if (name == "zero-copy" || name.empty()) {
      return FallbackMode::ZeroCopy;
    }
    if (name == "copy") {
      return FallbackMode::Copy;
    }
    if (name == "selective") {
      return FallbackMode::Selective;
    }
    TORCH_CHECK(false, "openreg: OPENREG_FALLBACK=", name,
                " is not a fallback mode; use zero-copy (default), copy or selective");
  }();
  return mode;
}

const char* fallback_mode_name(FallbackMode mode) {
  switch (mode) {
    case FallbackMode::ZeroCopy: return "zero-copy";
    case FallbackMode::Copy: return "copy";
    case FallbackMode::Selective: return "selective";
  }
  return "unknown";
}

namespace {

[[noreturn]] void raise_not_implemented(const c10::OperatorHandle& op) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "Could not run '", op.schema().operator_name(),
                              "' with arguments from the 'openreg' backend: it has no openreg "
                              "kernel and falling back to the CPU is not allowed for it "
                              "(OPENREG_FALLBACK=", fallback_mode_name(fallback_mode()),
                              ", see openreg_torch.fallback).");
}

// The way an allowed operator falls back: the copy mode copies, every other zero-copies.
void allowed_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  if (fallback_mode() == FallbackMode::Copy) {
    cpu_copy_fallback(op, stack);
  } else {
    zero_copy_fallback(op, stack);
  }
}

void denied_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  raise_not_implemented(op);
}

} // namespace

// DOC START: openreg-fallback
void openreg_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  if (fallback_mode() == FallbackMode::Selective) {
    raise_not_implemented(op);
  }
  allowed_fallback(op, stack);
}
// DOC END: openreg-fallback

// DOC START: selective-fallback
void register_fallback_for(const std::string& op_name, bool allow) {
  static std::mutex mutex;
  static std::vector<std::unique_ptr<torch::Library>> libraries;
  const std::lock_guard<std::mutex> lock(mutex);
  // "aten::add.Tensor" -> ("aten::add", "Tensor")
  const size_t separator = op_name.find("::");
  TORCH_CHECK(separator != std::string::npos, "openreg: expected a qualified operator name such "
              "as 'aten::add.Tensor', got '", op_name, "'");
  const size_t dot = op_name.find('.', separator);
  const c10::OperatorName name(op_name.substr(0, dot),
                               dot == std::string::npos ? "" : op_name.substr(dot + 1));
  TORCH_CHECK(c10::Dispatcher::singleton().findOp(name).has_value(), "openreg: no operator named '",
              op_name, "'");
  auto library = std::make_unique<torch::Library>(
      torch::Library::IMPL, op_name.substr(0, separator), c10::DispatchKey::PrivateUse1,
      __FILE__, __LINE__);
  library->impl(op_name.c_str(), allow ? torch::CppFunction::makeFromBoxedFunction<&allowed_fallback>()
                               : torch::CppFunction::makeFromBoxedFunction<&denied_fallback>());
  libraries.push_back(std::move(library));
}
// DOC END: selective-fallback

namespace {

// Whether a foreach call's tensors all live on one openreg device (CPU scalars aside).
bool on_one_device(const c10::OperatorHandle& op, const torch::jit::Stack& stack) {
  std::optional<c10::Device> device;
  bool one = true;
  auto note = [&](const at::Tensor& tensor) {
    if (!tensor.defined() || (tensor.device().is_cpu() && tensor.dim() == 0)) {
      return;
    }
    one = one && tensor.device().type() == c10::kPrivateUse1 &&
          (!device.has_value() || *device == tensor.device());
    device = tensor.device();
  };
  const size_t count = op.schema().arguments().size();
  for (size_t index = stack.size() - count; index < stack.size(); ++index) {
    const c10::IValue& value = stack[index];
    if (value.isTensor()) {
      note(value.toTensor());
    } else if (value.isTensorList()) {
      for (const at::Tensor& tensor : value.toTensorList()) {
        note(tensor);
      }
    }
  }
  return one;
}

// DOC START: foreach-fallback
// Foreach operators: one fallback call for a whole list on one device, instead of one
// per tensor. Lists spanning devices are allowed (as on CUDA, whose fast path also
// needs one device): the CPU entry is PyTorch's composite per-tensor loop, and run on
// the device tensors themselves, each tensor's operator dispatches to its own device.
void foreach_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  if (on_one_device(op, *stack)) {
    openreg_fallback(op, stack);
  } else {
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
  }
}
// DOC END: foreach-fallback

} // namespace

// DOC START: route-composite
size_t route_composite_ops_to_fallback() {
  static std::mutex mutex;
  static std::unique_ptr<torch::Library> library;
  static size_t routed = 0;
  const std::lock_guard<std::mutex> lock(mutex);
  if (library != nullptr || fallback_mode() == FallbackMode::Selective) {
    return routed;
  }
  library = std::make_unique<torch::Library>(torch::Library::IMPL, "aten",
                                             c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
    const auto op = dispatcher.findOp(name);
    if (!op.has_value() || name.name.rfind("aten::", 0) != 0 ||
        op->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1)) {
      continue;
    }
    const bool cpu_kernel = op->hasKernelForDispatchKey(c10::DispatchKey::CPU);
    const bool composite =
        op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional) ||
        op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd);
    const bool foreach = name.name.rfind("aten::_foreach_", 0) == 0;
    // mode.values: its composite rejects devices other than CPU, CUDA and XPU.
    const bool device_checking_composite = name.name == "aten::mode" &&
                                           name.overload_name == "values";
    // The CPU's own kernel instead of the composite; foreach lists in one call.
    const bool cpu_instead = composite && (cpu_kernel || device_checking_composite);
    const bool whole_list = composite && foreach && !cpu_kernel;
    if (!cpu_instead && !whole_list) {
      continue;
    }
    const std::string qualified = name.overload_name.empty()
        ? name.name : name.name + "." + name.overload_name;
    library->impl(qualified.c_str(),
                  whole_list ? torch::CppFunction::makeFromBoxedFunction<&foreach_fallback>()
                             : torch::CppFunction::makeFromBoxedFunction<&openreg_fallback>());
    routed += 1;
  }
  return routed;
}
// DOC END: route-composite

// DOC START: cpu-copy-fallback
void cpu_copy_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const std::optional<c10::Device> device = prepare_stack(op, stack);
  const c10::OptionalDeviceGuard guard(device);
  at::native::cpu_fallback(op, stack, /*error_on_views=*/false);
}
// DOC END: cpu-copy-fallback

} // namespace at::native::openreg
