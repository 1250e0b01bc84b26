// The zero-copy fallback: any operator without an openreg kernel runs PyTorch's CPU
// kernel directly on device memory. Device tensors are handed to the CPU kernel as
// aliases of their kernel view; CPU allocations the kernel makes on this thread come
// from device memory, so fresh results are adopted as device tensors without a copy.

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/SmallVector.h>

#include "aten/native/AllocationRouting.h"
#include "aten/native/DeviceKernel.h"
#include "aten/native/Fallback.h"
#include "aten/native/KernelView.h"
#include "runtime/OpenRegDeviceAllocator.h"
#include "runtime/OpenRegKernelLaunch.h"
#include "runtime/OpenRegStream.h"

namespace at::native::openreg {
namespace {

bool is_openreg(const at::Tensor& tensor) {
  return tensor.defined() && tensor.device().type() == c10::kPrivateUse1;
}

// A map for the handful of storages one call touches: a linear scan over an inline
// vector beats hashing (and allocating) on this per-operator path.
template <typename Value>
class SmallStorageMap {
 public:
  Value* find(const c10::StorageImpl* key) {
    for (auto& [stored, value] : entries_) {
      if (stored == key) {
        return &value;
      }
    }
    return nullptr;
  }
  Value& operator[](const c10::StorageImpl* key) {
    if (Value* value = find(key)) {
      return *value;
    }
    entries_.emplace_back(key, Value{});
    return entries_.back().second;
  }

 private:
  c10::SmallVector<std::pair<const c10::StorageImpl*, Value>, 4> entries_;
};

// One fallback call: the aliases made for its inputs and how to map results back.
class FallbackCall {
 public:
  FallbackCall(const c10::OperatorHandle& op, torch::jit::Stack* stack, c10::Device device)
      : op_(op), stack_(*stack), device_(device),
        first_(stack->size() - op.schema().arguments().size()) {}

  void run() {
    alias_inputs();
    {
      const RouteAllocationsToDevice routing(device_.index());
      c10::openreg::launch_kernel(c10::openreg::getCurrentOpenRegStream(device_.index()), [&] {
        op_.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), &stack_);
      });
    }
    write_back_mutated_inputs();
    map_results();
  }

 private:
  struct Aliased {
    at::Tensor original;
    at::Tensor alias;
    bool mutable_argument;
  };

  bool is_written(size_t argument) const {
    const auto* info = op_.schema().arguments()[argument].alias_info();
    return info != nullptr && info->isWrite();
  }

  at::Tensor alias_of(const at::Tensor& tensor, bool mutable_argument) {
    if (!is_openreg(tensor)) {
      return tensor;  // CPU tensors (scalars) go to the CPU kernel as they are
    }
    at::Tensor alias = kernel_alias(tensor, mutable_argument ? routing_allocator() : nullptr);
    originals_by_storage_[alias.storage().unsafeGetStorageImpl()] = tensor.storage();
    aliased_.push_back({tensor, alias, mutable_argument});
    return alias;
  }

  // DOC START: zero-copy-inputs
  void alias_inputs() {
    const size_t count = op_.schema().arguments().size();
    original_arguments_.assign(stack_.begin() + first_, stack_.end());
    for (size_t index = 0; index < count; ++index) {
      c10::IValue& value = stack_[first_ + index];
      const bool written = is_written(index);
      if (value.isTensor()) {
        value = alias_of(value.toTensor(), written);
      } else if (value.isTensorList()) {
        c10::List<at::Tensor> aliases;
        for (const at::Tensor& tensor : value.toTensorList()) {
          aliases.push_back(alias_of(tensor, written));
        }
        value = std::move(aliases);
      } else if (value.isList()) {  // e.g. Tensor?[] indices
        auto list = value.toList();
        c10::impl::GenericList aliases(list.elementType());
        for (const c10::IValue& element : list) {
          aliases.push_back(element.isTensor() ? c10::IValue(alias_of(element.toTensor(), written))
                                               : element);
        }
        value = std::move(aliases);
      } else if (value.isDevice() && value.toDevice().type() == c10::kPrivateUse1) {
        value = c10::Device(c10::kCPU);  // factory functions build on the CPU side
      }
    }
  }
  // DOC END: zero-copy-inputs

  // DOC START: zero-copy-write-back
  // out= kernels may resize their output: the new memory (routed, so on the device)
  // moves into the device storage, and the new shape onto the device tensor.
  void write_back_mutated_inputs() {
    for (Aliased& entry : aliased_) {
      if (!entry.mutable_argument) {
        continue;
      }
      c10::StorageImpl* alias_storage = entry.alias.storage().unsafeGetStorageImpl();
      c10::StorageImpl* device_storage = entry.original.storage().unsafeGetStorageImpl();
      if (alias_storage->data() != kernel_pointer(device_storage->data()) ||
          alias_storage->nbytes() != device_storage->nbytes()) {
        c10::DataPtr& moved = alias_storage->mutable_data_ptr();
        if (moved.get() == nullptr) {
          device_storage->set_data_ptr_noswap(
              c10::DataPtr(nullptr, c10::Device(c10::kPrivateUse1, device_.index())));
        } else {
          TORCH_INTERNAL_ASSERT(is_routed(moved), "openreg: ", op_.schema().name(),
                                " replaced an output's memory with host memory");
          device_storage->set_data_ptr_noswap(adopt_routed(moved, device_.index()));
        }
        device_storage->set_nbytes(alias_storage->nbytes());
        // The alias now points at memory it does not own; keep it off the old view.
        originals_by_storage_[alias_storage] = entry.original.storage();
      }
      auto* impl = entry.original.unsafeGetTensorImpl();
      if (impl->sizes() != entry.alias.sizes() || impl->strides() != entry.alias.strides() ||
          impl->storage_offset() != entry.alias.storage_offset()) {
        impl->set_sizes_and_strides(entry.alias.sizes(), entry.alias.strides(),
                                    entry.alias.storage_offset());
      }
    }
  }
  // DOC END: zero-copy-write-back

  // DOC START: zero-copy-results
  at::Tensor to_device(const at::Tensor& result) {
    if (!result.defined() || result.device().type() != c10::kCPU) {
      return result;
    }
    c10::StorageImpl* storage = result.storage().unsafeGetStorageImpl();
    // A view of an input: the same view of the device tensor.
    if (c10::Storage* original = originals_by_storage_.find(storage)) {
      return device_tensor_over(*original, result);
    }
    // Several results may share one fresh storage: they share one device storage.
    if (c10::Storage* adopted = adopted_.find(storage)) {
      return device_tensor_over(*adopted, result);
    }
    if (result.layout() == c10::kStrided) {
      if (auto adopted = adopt_storage(result.storage(), result_references_[storage], device_)) {
        adopted_[storage] = *adopted;
        return device_tensor_over(std::move(*adopted), result);
      }
    }
    return to_device_result(result, device_);
  }
  // DOC END: zero-copy-results

  void count_result_references(const c10::IValue& value) {
    if (value.isTensor() && value.toTensor().defined()) {
      result_references_[value.toTensor().storage().unsafeGetStorageImpl()] += 1;
    } else if (value.isTensorList()) {
      for (const at::Tensor& tensor : value.toTensorList()) {
        count_result_references(tensor);
      }
    }
  }

  c10::IValue map_result(const c10::IValue& value) {
    if (value.isTensor()) {
      return to_device(value.toTensor());
    }
    if (value.isTensorList()) {
      c10::List<at::Tensor> mapped;
      for (const at::Tensor& tensor : value.toTensorList()) {
        mapped.push_back(to_device(tensor));
      }
      return mapped;
    }
    return value;
  }

  // The argument a written-to return aliases (same alias set), e.g. `self` of add_.
  std::optional<c10::IValue> written_argument_for(const c10::Argument& result) const {
    const auto* info = result.alias_info();
    if (info == nullptr || !info->isWrite()) {
      return std::nullopt;
    }
    const auto& arguments = op_.schema().arguments();
    for (size_t index = 0; index < arguments.size(); ++index) {
      const auto* argument_info = arguments[index].alias_info();
      if (argument_info != nullptr && argument_info->beforeSets() == info->beforeSets()) {
        return original_arguments_[index];
      }
    }
    return std::nullopt;
  }

  void map_results() {
    const auto& returns = op_.schema().returns();
    const size_t first_result = stack_.size() - returns.size();
    for (size_t index = first_result; index < stack_.size(); ++index) {
      count_result_references(stack_[index]);
    }
    for (size_t index = 0; index < returns.size(); ++index) {
      c10::IValue& value = stack_[first_result + index];
      if (auto argument = written_argument_for(returns[index])) {
        value = *argument;  // in-place and out=: the very tensor the caller passed
      } else {
        value = map_result(value);
      }
    }
  }

  const c10::OperatorHandle& op_;
  torch::jit::Stack& stack_;
  const c10::Device device_;
  const size_t first_;
  c10::SmallVector<c10::IValue, 8> original_arguments_;
  c10::SmallVector<Aliased, 4> aliased_;
  SmallStorageMap<c10::Storage> originals_by_storage_;
  SmallStorageMap<c10::Storage> adopted_;
  SmallStorageMap<size_t> result_references_;
};

} // namespace

// DOC START: zero-copy-fallback
void zero_copy_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const std::optional<c10::Device> device = prepare_stack(op, stack);
  TORCH_CHECK(device.has_value(), "openreg: ", op.schema().name(),
              " reached the openreg fallback without an openreg tensor or device argument");
  const c10::DeviceGuard guard(*device);
  FallbackCall(op, stack, *device).run();
}
// DOC END: zero-copy-fallback

} // namespace at::native::openreg
