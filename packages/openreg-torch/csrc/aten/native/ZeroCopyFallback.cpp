// The zero-copy fallback: any operator without an openreg kernel runs PyTorch's CPU
// kernel directly on device memory. It is the boxed adapter of the execution layer
// (execution/DeviceCall.h): the stack's device tensors are swapped for kernel-view
// aliases, the CPU kernel is launched with its allocations routed to the device, and
// its results are mapped back in place on the stack by the schema's aliasing rules.

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/SmallVector.h>

#include <deque>

#include "aten/native/Fallback.h"
#include "execution/DeviceCall.h"

namespace at::native::openreg {
namespace {

// One boxed fallback call: the stack's device tensors swapped for aliases, the CPU
// kernel run, results mapped back in place on the stack.
class FallbackCall {
 public:
  FallbackCall(const c10::OperatorHandle& op, torch::jit::Stack* stack)
      : op_(op), stack_(*stack), call_(op.schema().name()),
        first_(stack->size() - op.schema().arguments().size()) {}

  void run() {
    TORCH_CHECK(prepare_stack(op_, &stack_, call_).has_value(), "openreg: ",
                op_.schema().name(),
                " reached the openreg fallback without an openreg tensor or device argument");
    alias_inputs();
    // The CPU kernel for the aliases: CPU's, or SparseCPU's / SparseCsrCPU's for sparse ones.
    const c10::DispatchKeySet kernel_keys = call_.kernel_keys();
    require_layout_kernel(kernel_keys.highestPriorityTypeId());
    if (kernel_keys != c10::DispatchKeySet(c10::DispatchKey::CPU)) {
      call_.carry_requires_grad();
    }
    call_.launch([&] { op_.redispatchBoxed(kernel_keys, &stack_); }, Allocations::Routed);
    call_.write_back();
    map_results();
  }

 private:
  // A sparse or nested call whose CPU kernel of that layout PyTorch lacks (it has a dense
  // linalg_vector_norm, no SparseCPU one): redispatched, it would fail naming 'SparseCPU', a
  // backend the caller never used. Name openreg's key, as CUDA's message names SparseCUDA.
  void require_layout_kernel(c10::DispatchKey cpu_key) const {
    if (cpu_key == c10::DispatchKey::CPU || op_.hasComputedKernelForDispatchKey(cpu_key)) {
      return;
    }
    const c10::DispatchKey openreg_key = c10::toRuntimePerBackendFunctionalityKey(
        c10::toFunctionalityKey(cpu_key), c10::BackendComponent::PrivateUse1Bit);
    TORCH_CHECK_NOT_IMPLEMENTED(false, "Could not run '", op_.schema().operator_name(),
                                "' with arguments from the '", openreg_key,
                                "' backend: PyTorch has no ", cpu_key,
                                " kernel for openreg's fallback to run on device memory");
  }

  bool is_written(size_t argument) const {
    const auto* info = op_.schema().arguments()[argument].alias_info();
    return info != nullptr && info->isWrite();
  }

  // DOC START: zero-copy-inputs
  void alias_inputs() {
    const size_t count = op_.schema().arguments().size();
    // Tensors move off the stack (no reference-count traffic) and stay alive here;
    // their aliases take their places.
    originals_.reserve(count);
    for (size_t index = 0; index < count; ++index) {
      c10::IValue& value = stack_[first_ + index];
      const bool tensors = value.isTensor() || value.isTensorList() || value.isList();
      originals_.push_back(tensors ? std::move(value) : value);
    }
    for (size_t index = 0; index < count; ++index) {
      const c10::IValue& original = originals_[index];
      c10::IValue& value = stack_[first_ + index];
      const bool written = is_written(index);
      auto alias = [&](const at::Tensor& tensor) {
        return written ? call_.alias_output(tensor) : call_.alias(tensor);
      };
      if (original.isTensor()) {
        value = alias(original.toTensor());
      } else if (original.isTensorList()) {
        c10::List<at::Tensor> aliases;
        for (at::Tensor tensor : original.toTensorList()) {
          // List elements are proxies: keep each tensor at a stable address.
          aliases.push_back(alias(list_elements_.emplace_back(std::move(tensor))));
        }
        value = std::move(aliases);
      } else if (original.isList()) {  // e.g. Tensor?[] indices
        const auto& list = original.toListRef();
        c10::impl::GenericList aliases(original.toList().elementType());
        aliases.reserve(list.size());
        for (const c10::IValue& element : list) {
          aliases.push_back(element.isTensor() ? c10::IValue(alias(element.toTensor()))
                                               : element);
        }
        value = std::move(aliases);
      } else if (original.isDevice() && original.toDevice().type() == c10::kPrivateUse1) {
        value = c10::Device(c10::kCPU);  // factory functions build on the CPU side
      }
    }
  }
  // DOC END: zero-copy-inputs

  void count_results(const c10::IValue& value) {
    if (value.isTensor()) {
      call_.count_result(value.toTensor());
    } else if (value.isTensorList()) {
      for (const at::Tensor& tensor : value.toTensorList()) {
        call_.count_result(tensor);
      }
    }
  }

  c10::IValue map_result(const c10::IValue& value) {
    if (value.isTensor()) {
      return call_.to_device(value.toTensor());
    }
    if (value.isTensorList()) {
      c10::List<at::Tensor> mapped;
      for (const at::Tensor& tensor : value.toTensorList()) {
        mapped.push_back(call_.to_device(tensor));
      }
      return mapped;
    }
    return value;
  }

  // The argument a written-to return aliases (same alias set), e.g. `self` of add_.
  const c10::IValue* written_argument_for(const c10::Argument& result) const {
    const auto* info = result.alias_info();
    if (info == nullptr || !info->isWrite()) {
      return nullptr;
    }
    const auto& arguments = op_.schema().arguments();
    for (size_t index = 0; index < arguments.size(); ++index) {
      const auto* argument_info = arguments[index].alias_info();
      if (argument_info != nullptr && argument_info->beforeSets() == info->beforeSets()) {
        return &originals_[index];
      }
    }
    return nullptr;
  }

  void map_results() {
    const auto& returns = op_.schema().returns();
    const size_t first_result = stack_.size() - returns.size();
    for (size_t index = first_result; index < stack_.size(); ++index) {
      count_results(stack_[index]);
    }
    for (size_t index = 0; index < returns.size(); ++index) {
      c10::IValue& value = stack_[first_result + index];
      if (const c10::IValue* argument = written_argument_for(returns[index])) {
        value = *argument;  // in-place and out=: the very tensor the caller passed
      } else {
        value = map_result(value);
      }
    }
  }

  const c10::OperatorHandle& op_;
  torch::jit::Stack& stack_;
  DeviceCall call_;
  const size_t first_;
  c10::SmallVector<c10::IValue, 8> originals_;
  std::deque<at::Tensor> list_elements_;  // never moves its elements
};

} // namespace

// DOC START: zero-copy-fallback
void zero_copy_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  FallbackCall(op, stack).run();
}
// DOC END: zero-copy-fallback

} // namespace at::native::openreg
