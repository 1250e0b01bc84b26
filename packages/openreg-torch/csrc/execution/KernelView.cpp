#include "execution/KernelView.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/StorageImpl.h>

#include <pthread.h>

#include <array>

#include "runtime/OpenRegException.h"

namespace at::native::openreg {

namespace detail {

std::array<DeviceViews, OR_MAX_DEVICES> known_device_views;
std::atomic<int> known_device_count{0};

namespace {
// A forked child has no device memory: it forgets the views so that every translation
// asks its runtime again, which refuses (orErrorForkedProcess) as before any was known.
void forget_device_views_in_child() {
  known_device_count.store(0, std::memory_order_relaxed);
  for (DeviceViews& views : known_device_views) {
    views.size.store(0, std::memory_order_relaxed);
  }
}
[[maybe_unused]] const int forget_in_child =
    pthread_atfork(nullptr, nullptr, &forget_device_views_in_child);

// Learns the views of the device whose own memory holds `device_pointer`, if any:
// memory opened from another process lies outside them and keeps asking the runtime.
void learn_views_around(const void* device_pointer) {
  const int device = orDeviceOfPointer(device_pointer);
  if (device < 0 || device >= OR_MAX_DEVICES ||
      known_device_views[device].size.load(std::memory_order_relaxed) != 0) {
    return;
  }
  void* device_view = nullptr;
  void* kernel_view = nullptr;
  size_t size = 0;
  if (orDeviceGetMemoryViews(device, &device_view, &kernel_view, &size) != orSuccess) {
    (void)orGetLastError();  // nothing learned; the runtime goes on answering
    return;
  }
  const auto address = reinterpret_cast<uintptr_t>(device_pointer);
  const auto begin = reinterpret_cast<uintptr_t>(device_view);
  if (address - begin >= size) {
    return;
  }
  DeviceViews& views = known_device_views[device];
  // Racing learners store the same values; the size last, so readers see a whole range.
  views.device_view.store(begin, std::memory_order_relaxed);
  views.kernel_shift.store(static_cast<char*>(kernel_view) - static_cast<char*>(device_view),
                           std::memory_order_relaxed);
  views.size.store(size, std::memory_order_release);
  int count = known_device_count.load(std::memory_order_relaxed);
  while (count < device + 1 &&
         !known_device_count.compare_exchange_weak(count, device + 1,
                                                   std::memory_order_release)) {
  }
}
} // namespace

void* translate_and_learn(const void* device_pointer) {
  void* kernel = nullptr;
  OPENREG_CHECK(orGetKernelPointer(&kernel, device_pointer));
  learn_views_around(device_pointer);
  return kernel;
}

} // namespace detail

// DOC START: kernel-alias
at::Tensor kernel_alias(const at::Tensor& device_tensor, c10::Allocator* allocator) {
  if (!device_tensor.defined()) {
    return device_tensor;
  }
  const c10::Storage& storage = device_tensor.storage();
  // The alias does not own the memory: the device tensor outlives every kernel.
  c10::DataPtr view(kernel_pointer(storage.data()), c10::Device(c10::kCPU));
  auto alias_storage = c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), storage.nbytes(), std::move(view), allocator,
      /*resizable=*/allocator != nullptr);
  at::Tensor alias = at::detail::make_tensor<c10::TensorImpl>(
      c10::Storage(std::move(alias_storage)), c10::DispatchKeySet(c10::DispatchKey::CPU),
      device_tensor.dtype());
  alias.unsafeGetTensorImpl()->set_sizes_and_strides(
      device_tensor.sizes(), device_tensor.strides(), device_tensor.storage_offset());
  alias._set_conj(device_tensor.is_conj());
  alias._set_neg(device_tensor.is_neg());
  return alias;
}
// DOC END: kernel-alias

namespace {

// DOC START: alias-cache
// This thread's recent input aliases, by the device tensor they were last made for. An
// entry is reused only while the cache alone holds it (no result or other call sees it
// change) and it is as it was left (dispatch keys, no autograd metadata, storage neither
// resized nor given an allocator); it is then pointed at the tensor's kernel-view memory,
// shape and bits, which costs nothing when they are unchanged (a tensor used op after
// op). A device tensor freed and replaced at the same address is simply aliased anew.
struct AliasCache {
  struct Entry {
    const c10::TensorImpl* device = nullptr;
    at::Tensor alias;
    c10::DispatchKeySet keys;  // the alias's keys when it was last handed out
    // The device memory it was last pointed at, and that memory's kernel view: the
    // runtime is asked again only when the device tensor's memory changed.
    const void* device_data = nullptr;
    void* kernel_data = nullptr;
  };
  static constexpr size_t kEntries = 8;
  std::array<Entry, kEntries> entries;
  size_t next = 0;  // replaced round-robin
};
// DOC END: alias-cache

// Reached through a plain pointer: a thread_local with a destructor costs a guard
// lookup on every access, and this one is read for every input.
OPENREG_HOT_THREAD_LOCAL AliasCache* alias_cache = nullptr;

C10_NOINLINE AliasCache& create_alias_cache() {
  struct Owner {
    ~Owner() {
      delete alias_cache;  // the aliases, at thread exit
      alias_cache = nullptr;
    }
  };
  static thread_local Owner owner;
  alias_cache = new AliasCache();
  return *alias_cache;
}

AliasCache& this_thread_alias_cache() {
  AliasCache* cache = alias_cache;
  return C10_LIKELY(cache != nullptr) ? *cache : create_alias_cache();
}

bool reusable(const AliasCache::Entry& entry) {
  const at::Tensor& alias = entry.alias;
  if (!alias.defined() || alias.use_count() != 1 || alias.weak_use_count() != 1) {
    return false;
  }
  const c10::TensorImpl* impl = alias.unsafeGetTensorImpl();
  const c10::Storage& storage = impl->unsafe_storage();  // aliases always have one
  return impl->key_set() == entry.keys && impl->autograd_meta() == nullptr &&
         !impl->has_symbolic_sizes_strides() && storage.use_count() == 1 &&
         storage.unsafeGetStorageImpl()->allocator() == nullptr &&
         !storage.unsafeGetStorageImpl()->resizable();
}

// An inline comparison: these are a few values, and memcmp is a call.
bool same_values(c10::IntArrayRef a, c10::IntArrayRef b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t index = 0; index < a.size(); ++index) {
    if (a[index] != b[index]) {
      return false;
    }
  }
  return true;
}

// Points a reusable alias of the same dtype at `device_tensor`'s kernel view.
void retarget(at::Tensor& alias, const at::Tensor& device_tensor, void* kernel) {
  c10::TensorImpl* impl = alias.unsafeGetTensorImpl();
  c10::StorageImpl* storage = impl->unsafe_storage().unsafeGetStorageImpl();
  const size_t nbytes = device_tensor.unsafeGetTensorImpl()->unsafe_storage().nbytes();
  if (storage->data_ptr().get() != kernel || storage->nbytes() != nbytes) {
    storage->set_data_ptr_noswap(c10::DataPtr(kernel, c10::Device(c10::kCPU)));
    storage->set_nbytes(nbytes);
  }
  if (!same_values(impl->sizes(), device_tensor.sizes()) ||
      !same_values(impl->strides(), device_tensor.strides()) ||
      impl->storage_offset() != device_tensor.storage_offset()) {
    impl->set_sizes_and_strides(device_tensor.sizes(), device_tensor.strides(),
                                device_tensor.storage_offset());
  }
  if (alias.is_conj() != device_tensor.is_conj()) {
    alias._set_conj(device_tensor.is_conj());
  }
  if (alias.is_neg() != device_tensor.is_neg()) {
    alias._set_neg(device_tensor.is_neg());
  }
}

} // namespace

const at::Tensor& input_kernel_alias(const at::Tensor& device_tensor) {
  if (!device_tensor.defined()) {
    return device_tensor;
  }
  AliasCache& cache = this_thread_alias_cache();
  const c10::TensorImpl* device = device_tensor.unsafeGetTensorImpl();
  AliasCache::Entry* slot = nullptr;
  for (AliasCache::Entry& entry : cache.entries) {
    if (entry.device == device) {
      slot = &entry;
      break;
    }
  }
  if (slot == nullptr) {
    slot = &cache.entries[cache.next];
    cache.next = (cache.next + 1) % AliasCache::kEntries;
  }
  const void* device_data = device_tensor.storage().data();
  if (reusable(*slot) && slot->alias.dtype() == device_tensor.dtype()) {
    if (slot->device_data != device_data) {
      slot->kernel_data = kernel_pointer(device_data);
      slot->device_data = device_data;
    }
    retarget(slot->alias, device_tensor, slot->kernel_data);
  } else {
    slot->alias = kernel_alias(device_tensor);
    slot->device_data = device_data;
    slot->kernel_data = const_cast<void*>(slot->alias.storage().data());
  }
  slot->device = device;
  slot->keys = slot->alias.unsafeGetTensorImpl()->key_set();
  return slot->alias;
}

} // namespace at::native::openreg
