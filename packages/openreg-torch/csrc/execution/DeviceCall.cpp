#include "execution/DeviceCall.h"

#include <ATen/ops/empty_strided.h>

#include <typeinfo>

#include "execution/KernelView.h"
#include "execution/MemberKernelView.h"
#include "runtime/OpenRegDeviceAllocator.h"
#include "runtime/OpenRegFunctions.h"

namespace at::native::openreg {
namespace {

template <typename Value>
Value* find_storage(
    c10::SmallVectorImpl<std::pair<const c10::StorageImpl*, Value>>& entries,
    const c10::StorageImpl* key) {
  for (auto& [stored, value] : entries) {
    if (stored == key) {
      return &value;
    }
  }
  return nullptr;
}

// The device storage for a fresh CPU storage the kernel allocated, if its memory came
// from the device (routed) and nothing but the `references` result tensors holds it.
std::optional<c10::Storage> adopt_storage(const c10::Storage& storage, size_t references,
                                          c10::Device device) {
  c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
  if (!is_routed(impl->data_ptr()) || storage.use_count() != references) {
    return std::nullopt;
  }
  // The storage itself becomes the device storage (its memory already is device
  // memory): the CPU results holding it are about to be dropped.
  impl->set_data_ptr_noswap(adopt_routed(impl->mutable_data_ptr(), device.index()));
  impl->set_allocator(&c10::openreg::getDeviceAllocator());
  return storage;
}

// A device tensor with `like`'s sizes, strides, offset, dtype and bits over `storage`.
at::Tensor device_tensor_over(c10::Storage storage, const at::Tensor& like) {
  at::Tensor result = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), like.dtype());
  result.unsafeGetTensorImpl()->set_sizes_and_strides(like.sizes(), like.strides(),
                                                       like.storage_offset());
  result._set_conj(like.is_conj());
  result._set_neg(like.is_neg());
  return result;
}

// DOC START: result-becomes-device-tensor
// A fresh result nothing else sees (no other reference, weak or Python; a plain TensorImpl
// without autograd or backend metadata) is itself turned into the device tensor: its
// storage, already adopted, is the device storage, and its device and backend keys become
// openreg's (autocast key included). That saves making a second TensorImpl, copying the
// shape into it and freeing the first: about a fifth of a small operator's overhead.
bool can_become_device_tensor(const at::Tensor& result) {
  c10::TensorImpl* impl = result.unsafeGetTensorImpl();
  return result.use_count() == 1 && result.weak_use_count() == 1 &&
         typeid(*impl) == typeid(c10::TensorImpl) &&
         impl->pyobj_slot()->load_pyobj() == nullptr && impl->autograd_meta() == nullptr &&
         impl->get_backend_meta() == nullptr && impl->allow_tensor_metadata_change() &&
         !impl->is_wrapped_number() && !impl->has_symbolic_sizes_strides() &&
         impl->key_set().highestBackendKey() == c10::BackendComponent::CPUBit;
}

at::Tensor become_device_tensor(const at::Tensor& result, c10::Storage storage,
                                c10::Device device) {
  c10::TensorImpl* impl = result.unsafeGetTensorImpl();
  impl->set_storage_keep_dtype(std::move(storage));  // the device follows the storage
  impl->_change_backend_component_keys(device);
  return result;
}
// DOC END: result-becomes-device-tensor

} // namespace

std::optional<c10::Device> DeviceCall::find_device() {
  device_ = operands_.device();
  if (device_.has_value()) {
    guard_.make_current(*device_);
  }
  return device_;
}

void DeviceCall::use_device(c10::Device device) {
  device_ = device;
  guard_.make_current(device);
}

at::Tensor DeviceCall::alias(const at::Tensor& original) {
  return make_alias(original, /*output=*/false, /*written=*/false);
}

at::Tensor DeviceCall::alias_written(const at::Tensor& original) {
  return make_alias(original, /*output=*/false, /*written=*/true);
}

at::Tensor DeviceCall::alias_output(const at::Tensor& original) {
  return make_alias(original, /*output=*/true, /*written=*/true);
}

at::Tensor DeviceCall::make_alias(const at::Tensor& original, bool output, bool written) {
  if (!original.defined() || original.device().type() != c10::kPrivateUse1) {
    return original;  // CPU tensors go to the CPU kernel as they are
  }
  if (has_members(original)) {
    return make_member_alias(original, output);
  }
  TORCH_CHECK(original.layout() == c10::kStrided, "openreg: ", op_name_, " got a ",
              original.layout(), " tensor; openreg supports strided tensors only");
  if (output) {
    aliased_.push_back({&original, kernel_alias(original, routing_allocator()),
                        original.storage().unsafeGetStorageImpl(), output, written});
  } else {
    // A tensor passed twice (a * a, x.op_(x)) is one tensor to the CPU kernel too.
    for (size_t index = 0; index < aliased_.size(); ++index) {
      Aliased& entry = aliased_[index];
      if (!entry.output &&
          entry.original->unsafeGetTensorImpl() == original.unsafeGetTensorImpl()) {
        if (written && !entry.written) {
          entry.written = true;
          share_written_storage(index);
        }
        return entry.alias;
      }
    }
    aliased_.push_back({&original, input_kernel_alias(original),
                        original.storage().unsafeGetStorageImpl(), output, written});
  }
  share_written_storage(aliased_.size() - 1);
  return aliased_.back().alias;
}

// DOC START: shared-alias-storage
// Each alias has a storage of its own, but CPU kernels tell whether what they write
// overlaps what they read by comparing storages (TensorIterator's overlap checks,
// assert_no_overlap): `x[1:].copy_(x[:-1])` or `torch.cumsum(x[:-1], 0, out=x[1:])` must
// raise "unsupported operation" as on the CPU, not read what they already overwrote. So
// when an argument shares its device storage with another and either is written, their
// aliases are given one storage: the resizable output's when there is one (a resize is
// then seen through every alias, as on the CPU), else the first one's. Aliases of inputs
// that are only read keep their own (q, k and v split from one tensor stay cached).
void DeviceCall::share_written_storage(size_t changed) {
  if (!shares_device_storage(changed)) {
    return;  // nearly every call
  }
  const c10::StorageImpl* device_storage = aliased_[changed].device_storage;
  c10::SmallVector<size_t, 2> sharing;
  bool any_written = false;
  for (size_t index = 0; index < aliased_.size(); ++index) {
    if (aliased_[index].device_storage == device_storage) {
      sharing.push_back(index);
      any_written = any_written || aliased_[index].written;
    }
  }
  if (!any_written) {
    return;
  }
  size_t keeper = sharing.front();
  for (size_t index : sharing) {
    if (aliased_[index].output) {
      keeper = index;
    }
  }
  const c10::Storage storage = aliased_[keeper].alias.storage();
  for (size_t index : sharing) {
    c10::TensorImpl* alias = aliased_[index].alias.unsafeGetTensorImpl();
    if (alias->storage().unsafeGetStorageImpl() != storage.unsafeGetStorageImpl()) {
      // A cached input alias given another storage is not reused after this call (its
      // storage is no longer its own): the alias cache makes a new one.
      alias->set_storage_keep_dtype(storage);
    }
  }
}

// Whether another alias of this call has `entry`'s device storage. A few aliases are
// scanned; a call with many (tensor lists: a _foreach operator over a model's parameters)
// counts them per storage, so the check stays constant time per alias.
bool DeviceCall::shares_device_storage(size_t entry) {
  constexpr size_t kScanned = 8;
  const c10::StorageImpl* device_storage = aliased_[entry].device_storage;
  if (aliased_.size() <= kScanned) {
    for (size_t index = 0; index < aliased_.size(); ++index) {
      if (index != entry && aliased_[index].device_storage == device_storage) {
        return true;
      }
    }
    return false;
  }
  for (; counted_ < aliased_.size(); ++counted_) {
    ++aliases_per_storage_[aliased_[counted_].device_storage];
  }
  return aliases_per_storage_[device_storage] > 1;
}
// DOC END: shared-alias-storage

// DOC START: member-alias
// Sparse and nested tensors (MemberKernelView.h): their members are held here (their
// aliases point at them) and aliased like any dense tensor, outputs included: a kernel
// that grows a written sparse tensor's values grows device memory.
at::Tensor DeviceCall::make_member_alias(const at::Tensor& original, bool output) {
  // A sparse tensor passed twice (smm passes its result as both sspaddmm's self and out)
  // is one tensor to the CPU kernel too: CPU kernels tell such arguments apart by their
  // TensorImpl, and a resize of one must be seen through the other.
  for (MemberAliased& seen : member_aliased_) {
    if (seen.original->unsafeGetTensorImpl() != original.unsafeGetTensorImpl()) {
      continue;
    }
    if (output && !seen.output && is_sparse_layout(original.layout())) {
      // Read first, written now: its members become output aliases (sharing storage
      // with the read ones), and the one alias is set over them.
      for (size_t index = 0; index < seen.members.size(); ++index) {
        seen.member_aliases[index] = make_alias(*seen.members[index], true, true);
      }
      set_member_tensors_of(seen.alias, seen.alias, seen.member_aliases);
      seen.output = true;
    } else if (output && !seen.output) {
      break;  // a nested tensor keeps its storage: it gets an output alias of its own
    }
    return seen.alias;
  }
  MemberAliased entry{&original, {}, output, {}, {}};
  for (at::Tensor& member : member_tensors(original)) {
    const at::Tensor& held = held_members_.emplace_back(std::move(member));
    entry.members.push_back(&held);
    entry.member_aliases.push_back(make_alias(held, output, output));
  }
  entry.alias = tensor_over_members(original, entry.member_aliases, c10::Device(c10::kCPU));
  kernel_keys_ = kernel_keys_.add(cpu_kernel_key(original));
  at::Tensor alias = entry.alias;
  member_aliased_.push_back(std::move(entry));
  return alias;
}
// DOC END: member-alias

void DeviceCall::carry_requires_grad() {
  for (Aliased& entry : aliased_) {
    if (entry.original->requires_grad()) {
      entry.alias.requires_grad_(true);
    }
  }
  for (MemberAliased& entry : member_aliased_) {
    if (entry.original->requires_grad()) {
      entry.alias.requires_grad_(true);
    }
  }
}

const at::Tensor* DeviceCall::member_original_of(const at::Tensor& alias) const {
  for (const MemberAliased& entry : member_aliased_) {
    if (entry.alias.unsafeGetTensorImpl() == alias.unsafeGetTensorImpl()) {
      return entry.original;
    }
  }
  return nullptr;
}

const at::Tensor* DeviceCall::original_over(const c10::StorageImpl* alias_storage) const {
  for (const Aliased& entry : aliased_) {
    if (entry.alias.storage().unsafeGetStorageImpl() == alias_storage) {
      return entry.original;
    }
  }
  return nullptr;
}

const at::Tensor* DeviceCall::original_of(const at::Tensor& alias) const {
  for (const Aliased& entry : aliased_) {
    if (entry.alias.unsafeGetTensorImpl() == alias.unsafeGetTensorImpl()) {
      return entry.original;
    }
  }
  return member_original_of(alias);
}

// DOC START: zero-copy-write-back
// out= kernels may resize their output: the new memory (routed, so on the device)
// moves into the device storage, and the new shape onto the device tensor.
void DeviceCall::write_back() {
  for (Aliased& entry : aliased_) {
    if (!entry.output) {
      continue;
    }
    c10::StorageImpl* alias_storage = entry.alias.storage().unsafeGetStorageImpl();
    c10::StorageImpl* device_storage = entry.original->storage().unsafeGetStorageImpl();
    if (alias_storage->data() != kernel_pointer(device_storage->data()) ||
        alias_storage->nbytes() != device_storage->nbytes()) {
      c10::DataPtr& moved = alias_storage->mutable_data_ptr();
      if (moved.get() == nullptr) {
        device_storage->set_data_ptr_noswap(c10::DataPtr(nullptr, *device_));
      } else {
        TORCH_INTERNAL_ASSERT(is_routed(moved), "openreg: ", op_name_,
                              " replaced an output's memory with host memory");
        device_storage->set_data_ptr_noswap(adopt_routed(moved, device_->index()));
      }
      device_storage->set_nbytes(alias_storage->nbytes());
    }
    auto* impl = entry.original->unsafeGetTensorImpl();
    if (impl->sizes() != entry.alias.sizes() || impl->strides() != entry.alias.strides() ||
        impl->storage_offset() != entry.alias.storage_offset()) {
      impl->set_sizes_and_strides(entry.alias.sizes(), entry.alias.strides(),
                                  entry.alias.storage_offset());
    }
  }
  for (const MemberAliased& entry : member_aliased_) {
    if (entry.output) {
      write_back_members(entry);
    }
  }
}
// DOC END: zero-copy-write-back

// DOC START: member-write-back
// The kernel may have swapped a written sparse alias's members (e.g. add_ builds new
// indices and values): members it kept are the device tensors written back above,
// others are results, mapped like any result (a view of an input, or adopted).
void DeviceCall::write_back_members(const MemberAliased& entry) {
  const c10::SmallVector<at::Tensor, 3> now = member_tensors(entry.alias);
  auto kept = [&](size_t index) {
    return now[index].unsafeGetTensorImpl() == entry.member_aliases[index].unsafeGetTensorImpl();
  };
  for (size_t index = 0; index < now.size(); ++index) {
    if (!kept(index)) {
      count_result(now[index]);
    }
  }
  c10::SmallVector<at::Tensor, 3> members;
  for (size_t index = 0; index < now.size(); ++index) {
    members.push_back(kept(index) ? *entry.members[index] : to_device(now[index]));
  }
  set_member_tensors_of(*entry.original, entry.alias, members);
}
// DOC END: member-write-back

void DeviceCall::count_result(const at::Tensor& result) {
  if (!result.defined()) {
    return;
  }
  if (has_members(result)) {
    // Its members are the results that hold memory (unless it is an argument's alias).
    if (result.device().is_cpu() && member_original_of(result) == nullptr) {
      const c10::SmallVector<at::Tensor, 3> members = member_tensors(result);
      for (const at::Tensor& member : members) {
        count_result(member);
      }
      for (size_t extra = own_member_references(result); extra > 0; --extra) {
        count_result(members[0]);
      }
    }
    return;
  }
  if (result.layout() != c10::kStrided) {
    return;  // no storage; to_device() names the problem
  }
  const c10::StorageImpl* storage = result.storage().unsafeGetStorageImpl();
  if (size_t* count = find_storage(result_references_, storage)) {
    *count += 1;
  } else {
    result_references_.emplace_back(storage, 1);
  }
}

// DOC START: zero-copy-results
at::Tensor DeviceCall::to_device(const at::Tensor& result) {
  if (!result.defined() || result.device().type() != c10::kCPU) {
    return result;
  }
  if (has_members(result)) {
    return members_to_device(result);
  }
  TORCH_CHECK(result.layout() == c10::kStrided, "openreg: ", op_name_, " produced a ",
              result.layout(), " tensor; openreg supports strided tensors only");
  // Its quantizer would be lost: an openreg tensor of a quantized dtype that no operator
  // can read.
  TORCH_CHECK_NOT_IMPLEMENTED(!result.is_quantized(), "openreg: ", op_name_,
                              " produced a quantized tensor; openreg does not support "
                              "quantized tensors");
  const c10::StorageImpl* storage = result.storage().unsafeGetStorageImpl();
  // A view of an input: the same view of the device tensor.
  if (const at::Tensor* original = original_over(storage)) {
    return device_tensor_over(original->storage(), result);
  }
  // Several results may share one fresh storage: they share one device storage.
  if (c10::Storage* adopted = find_storage(adopted_, storage)) {
    return device_tensor_over(*adopted, result);
  }
  const size_t* references = find_storage(result_references_, storage);
  if (auto adopted = adopt_storage(result.storage(), references ? *references : 1, *device_)) {
    adopted_.emplace_back(storage, *adopted);
    if (can_become_device_tensor(result)) {
      return become_device_tensor(result, std::move(*adopted), *device_);
    }
    return device_tensor_over(std::move(*adopted), result);
  }
  return copy_to_device(result);
}

// Host memory (e.g. allocated by an intra-op worker thread) or shared: copied over.
at::Tensor DeviceCall::copy_to_device(const at::Tensor& result) const {
  at::Tensor copy = at::empty_strided(result.sizes(), result.strides(),
                                      result.options().device(*device_));
  if (result.numel() == 0) {
    return copy;  // e.g. the empty members a fresh sparse tensor starts with
  }
  launch_kernel(c10::openreg::getCurrentOpenRegStream(device_->index()), op_name_,
                [&] { kernel_alias(copy).copy_(result); });
  return copy;
}
// DOC END: zero-copy-results

// DOC START: member-results
// A sparse or nested result: the argument it is, or an openreg one over its members
// mapped as dense results are (views of inputs stay views, fresh memory is adopted).
at::Tensor DeviceCall::members_to_device(const at::Tensor& result) {
  if (const at::Tensor* original = member_original_of(result)) {
    return *original;
  }
  c10::SmallVector<at::Tensor, 3> members;
  for (const at::Tensor& member : member_tensors(result)) {
    members.push_back(to_device(member));
  }
  return tensor_over_members(result, members, *device_);
}
// DOC END: member-results

} // namespace at::native::openreg
