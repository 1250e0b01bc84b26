#include "aten/native/Fallback.h"

#include <ATen/native/CPUFallback.h>
#include <ATen/ops/_native_batch_norm_legit.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "execution/DeviceCall.h"
#include "runtime/OpenRegGenerator.h"

namespace at::native::openreg {
namespace {

// The call's device: that of its openreg tensors, or of a device argument (factory
// functions), rejecting the mixes CUDA rejects (see CallDevice).
std::optional<c10::Device> find_device(DeviceCall& call, const torch::jit::Stack& stack,
                                       size_t first) {
  for (size_t index = first; index < stack.size(); ++index) {
    const c10::IValue& value = stack[index];
    if (value.isTensor()) {
      call.note_operand(value.toTensor());
    } else if (value.isTensorList()) {
      for (const at::Tensor& tensor : value.toTensorList()) {
        call.note_operand(tensor);
      }
    } else if (value.isList()) {  // Tensor?[] indices
      for (const c10::IValue& element : value.toListRef()) {
        if (element.isTensor()) {
          call.note_index(element.toTensor());
        }
      }
    } else if (value.isDevice()) {
      call.note_device_argument(value.toDevice());
    } else if (value.isGenerator()) {
      call.note_generator(value.toGenerator());
    }
  }
  return call.find_device();
}

// DOC START: generator-substitution
// CPU kernels only accept CPU generators: hand them the one an openreg generator wraps,
// and the device's default generator's when the caller passed none (kernel_generator).
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
    if (!value.isGenerator() && !device.has_value()) {
      continue;
    }
    value = c10::openreg::kernel_generator(
        value.isGenerator() ? std::optional<at::Generator>(value.toGenerator()) : std::nullopt,
        device.has_value() ? device->index() : -1, op.schema().name());
  }
}
// DOC END: generator-substitution

} // namespace

std::optional<c10::Device> prepare_stack(const c10::OperatorHandle& op, torch::jit::Stack* stack,
                                         DeviceCall& call) {
  const size_t count = op.schema().arguments().size();
  const size_t first = stack->size() - count;
  const std::optional<c10::Device> device = find_device(call, *stack, first);
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

// DOC START: missing-cpu-kernel
// Both fallbacks run the operator's CPU kernel. A CUDA-only operator has none: redispatched
// to the CPU it would fail with "Could not run ... from the 'CPU' backend", which blames a
// backend the user never asked for. Name what is actually missing instead.
[[noreturn]] void raise_missing_on_openreg(const c10::OperatorHandle& op) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "Could not run '", op.schema().operator_name(),
                              "' with arguments from the 'openreg' backend: the operator is "
                              "missing on openreg (it has no openreg kernel, and PyTorch has "
                              "no CPU kernel for openreg's fallback to run on device memory; "
                              "operators implemented for CUDA only need an openreg kernel).");
}

// Whether PyTorch has a CPU kernel for the fallback to run: the dense one, or for sparse
// and nested calls the one of SparseCPU, SparseCsrCPU or NestedTensorCPU.
bool has_cpu_kernel(const c10::OperatorHandle& op) {
  for (const auto key : {c10::DispatchKey::CPU, c10::DispatchKey::SparseCPU,
                         c10::DispatchKey::SparseCsrCPU, c10::DispatchKey::NestedTensorCPU}) {
    if (op.hasComputedKernelForDispatchKey(key)) {
      return true;
    }
  }
  return false;
}
// DOC END: missing-cpu-kernel

} // namespace

namespace {
// PyTorch's cpu_fallback moves sparse arguments to the CPU but then calls the dense CPU
// kernel ("Could not run 'aten::_coalesce' ... from the 'CPU' backend").
bool has_sparse_argument(const c10::OperatorHandle& op, const torch::jit::Stack& stack) {
  const auto arguments = torch::jit::last(stack, op.schema().arguments().size());
  return std::any_of(arguments.begin(), arguments.end(), [](const c10::IValue& value) {
    if (value.isTensor()) {
      return value.toTensor().layout() != c10::kStrided;
    }
    if (value.isTensorList()) {
      const auto tensors = value.toTensorList();
      return std::any_of(tensors.begin(), tensors.end(), [](const at::Tensor& tensor) {
        return tensor.defined() && tensor.layout() != c10::kStrided;
      });
    }
    return false;
  });
}
} // namespace

// The way an allowed operator falls back: the copy mode copies (strided tensors: sparse
// ones zero-copy, as cpu_fallback cannot run them), every other mode zero-copies.
void allowed_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  if (!has_cpu_kernel(op)) {
    raise_missing_on_openreg(op);
  }
  if (fallback_mode() == FallbackMode::Copy && !has_sparse_argument(op, *stack)) {
    cpu_copy_fallback(op, stack);
  } else {
    zero_copy_fallback(op, stack);
  }
}

void denied_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  raise_not_implemented(op);
}

void quantized_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "openreg: ", op.schema().operator_name(),
                              " on a quantized openreg tensor; openreg does not support "
                              "quantized tensors (quantize on the CPU)");
}

// DOC START: openreg-fallback
void openreg_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  if (fallback_mode() == FallbackMode::Selective) {
    raise_not_implemented(op);
  }
  allowed_fallback(op, stack);
}
// DOC END: openreg-fallback

void sparse_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  TORCH_CHECK_NOT_IMPLEMENTED(
      op.schema().name().rfind("c10d::", 0) != 0, "openreg: ", op.schema().operator_name(),
      " on a sparse openreg tensor: of torch.distributed's collectives only all_reduce ",
      "(ReduceOp.SUM) supports sparse tensors, and sparse COO ones only, as on CUDA; use a ",
      "dense tensor (to_dense()) otherwise");
  openreg_fallback(op, stack);
}

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

} // namespace

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

namespace {

// DOC START: copy-fallback-mends
// cpu_fallback writes back only the arguments a schema marks as written (a!).
// native_batch_norm updates its running statistics without saying so: call the operator
// that declares them instead (the CPU's native_batch_norm runs the same kernel).
bool declare_hidden_mutations(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  if (op.schema().name() != "aten::native_batch_norm") {
    return false;
  }
  auto arguments = torch::jit::last(*stack, 8);
  const bool training = arguments[5].toBool();
  if (!training || arguments[3].isNone() || arguments[4].isNone()) {
    return false;
  }
  at::Tensor running_mean = arguments[3].toTensor();
  at::Tensor running_var = arguments[4].toTensor();
  auto [output, mean, invstd] = at::_native_batch_norm_legit(
      arguments[0].toTensor(), arguments[1].toOptional<at::Tensor>(),
      arguments[2].toOptional<at::Tensor>(), running_mean, running_var, training,
      arguments[6].toDouble(), arguments[7].toDouble());
  torch::jit::drop(*stack, 8);
  torch::jit::push(*stack, std::move(output), std::move(mean), std::move(invstd));
  return true;
}

// cpu_fallback returns fresh results on the device of the first tensor argument, which is
// a CPU scalar in `1 - openreg_tensor`: they belong on the call's device, as on CUDA.
void return_on_device(const c10::OperatorHandle& op, torch::jit::Stack* stack,
                      c10::Device device) {
  const size_t count = op.schema().returns().size();
  for (size_t index = stack->size() - count; index < stack->size(); ++index) {
    c10::IValue& value = (*stack)[index];
    if (value.isTensor() && value.toTensor().defined() && value.toTensor().is_cpu()) {
      value = value.toTensor().to(device);
    } else if (value.isTensorList()) {
      auto tensors = value.toTensorList();
      for (size_t element = 0; element < tensors.size(); ++element) {
        const at::Tensor tensor = tensors[element];
        if (tensor.defined() && tensor.is_cpu()) {
          tensors[element] = tensor.to(device);
        }
      }
    }
  }
}
// DOC END: copy-fallback-mends

} // namespace

// DOC START: cpu-copy-fallback
void cpu_copy_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  DeviceCall call(op.schema().name());  // checks operands and makes the device current
  const std::optional<c10::Device> device = prepare_stack(op, stack, call);
  if (declare_hidden_mutations(op, stack)) {
    return;
  }
  at::native::cpu_fallback(op, stack, /*error_on_views=*/false);
  if (device.has_value() && device->type() == c10::kPrivateUse1) {
    return_on_device(op, stack, *device);
  }
}
// DOC END: cpu-copy-fallback

} // namespace at::native::openreg
