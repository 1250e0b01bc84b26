#pragma once

// DOC START: device-call
// The execution layer: how a CPU computation becomes openreg device work. Every openreg
// kernel that runs CPU code on device memory is one DeviceCall, in this order:
//   1. find the call's device and check its operands (CallDevice): one openreg device;
//      CPU tensors only as 0-dim scalars or index lists, as on CUDA;
//   2. present inputs as aliases of their kernel view (KernelView): no copy;
//   3. launch the CPU kernel stream-ordered through the launch point (DeviceLaunch),
//      its CPU allocations on this thread routed to device memory (AllocationRouting);
//   4. adopt or copy the results by the schema's aliasing rules:
//      - a result viewing an input becomes the same view of the device tensor;
//      - a fresh result lives in routed device memory and is adopted (no copy) when the
//        results alone hold it; several results sharing one storage share one device
//        storage; anything else (worker-thread allocations) is copied;
//      - an output the kernel resized (out=) gets the new memory and shape written back;
//      sparse and nested tensors are aliased and mapped member by member
//      (MemberKernelView.h).
// Its adapters: the boxed fallback (aten/native/ZeroCopyFallback.cpp), unboxed kernels
// (RunOnDevice.h), TensorIterator loops (DeviceLoops.h), copies and .item().
//
// DOC END: device-call
//
// Originals are held by pointer, never copied: copying a tensor Python holds makes
// PyTorch take the GIL to keep its Python object alive, which costs more than a kernel.

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/SmallVector.h>

#include <list>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "execution/AllocationRouting.h"
#include "execution/CallDevice.h"
#include "execution/DeviceLaunch.h"
#include "runtime/OpenRegFunctions.h"
#include "runtime/OpenRegMacros.h"
#include "runtime/OpenRegStream.h"

namespace at::native::openreg {

// Where a kernel's CPU allocations go while it runs (step 3).
enum class Allocations {
  Routed,  // device memory: the kernel makes fresh results
  Host,    // host memory: the kernel only writes its arguments (in place); its scratch
           // stays in host memory, which is cheaper to allocate than device memory
};

class OPENREG_TORCH_API DeviceCall {
 public:
  explicit DeviceCall(std::string_view op_name) : op_name_(op_name), operands_(op_name) {}
  DeviceCall(const DeviceCall&) = delete;
  DeviceCall& operator=(const DeviceCall&) = delete;

  std::string_view op_name() const { return op_name_; }

  // 1. Operands (see CallDevice), then find_device() resolves the device, rejecting the
  //    mixes CUDA rejects, and makes it current for the call. nullopt: no openreg device.
  void note_operand(const at::Tensor& tensor) { operands_.note_operand(tensor); }
  void note_index(const at::Tensor& tensor) { operands_.note_index(tensor); }
  void note_device_argument(c10::Device device) { operands_.note_device_argument(device); }
  void note_generator(const at::Generator& generator) { operands_.note_generator(generator); }
  std::optional<c10::Device> find_device();
  // For work whose device follows its own rule (a copy runs on its destination's).
  void use_device(c10::Device device);
  c10::Device device() const { return *device_; }

  // 2. The tensor the CPU kernel sees: an alias of an openreg tensor's kernel view; CPU
  //    tensors (scalars, indices) as they are. `original` must outlive the call. A
  //    sparse or nested tensor becomes a CPU one over its members' aliases
  //    (MemberKernelView.h).
  at::Tensor alias(const at::Tensor& original);
  // The same for an argument the kernel writes in place (never resizes).
  at::Tensor alias_written(const at::Tensor& original);
  // The same for an output the kernel may resize (out=); see write_back().
  at::Tensor alias_output(const at::Tensor& original);
  // The dispatch keys of the CPU kernel for the aliases made so far: CPU, and
  // SparseCPU / SparseCsrCPU / NestedTensorCPU once a sparse or nested alias exists.
  c10::DispatchKeySet kernel_keys() const { return kernel_keys_; }
  // Gives each alias its original's requires_grad. Sparse CPU kernels read it (e.g.
  // sparse.mm with a reduction keeps what its backward needs only for inputs that
  // require grad); aliases otherwise leave it unset, which costs nothing.
  void carry_requires_grad();

  // 3. Runs `kernel` stream-ordered on the current stream of the call's device.
  template <typename Kernel>
  void launch(Kernel&& kernel, Allocations allocations) {
    const c10::openreg::OpenRegStream stream =
        c10::openreg::getCurrentOpenRegStream(device_->index());
    std::optional<RouteAllocationsToDevice> routing;
    if (allocations == Allocations::Routed) {
      routing.emplace(stream);
    }
    launch_kernel(stream, op_name_, std::forward<Kernel>(kernel));
  }

  // 4. Moves memory and shape of resized outputs back onto their device tensors; a
  //    written sparse argument takes the members and metadata its alias ended with.
  void write_back();
  // Results: count every result first, then map each with to_device().
  void count_result(const at::Tensor& result);
  at::Tensor to_device(const at::Tensor& result);
  // The openreg tensor whose alias is `alias` (nullptr if none): in-place returns.
  const at::Tensor* original_of(const at::Tensor& alias) const;

 private:
  struct Aliased {
    const at::Tensor* original;
    at::Tensor alias;
    const c10::StorageImpl* device_storage;  // the original's
    bool output;   // may be resized (out=)
    bool written;  // written in place or an output
  };

  // A sparse argument: its alias, and its members as held here with their aliases.
  struct MemberAliased {
    const at::Tensor* original;
    at::Tensor alias;
    bool output;
    c10::SmallVector<const at::Tensor*, 3> members;
    c10::SmallVector<at::Tensor, 3> member_aliases;
  };

  at::Tensor make_alias(const at::Tensor& original, bool output, bool written);
  void share_written_storage(size_t changed);
  bool shares_device_storage(size_t entry);
  at::Tensor make_member_alias(const at::Tensor& original, bool output);
  const at::Tensor* original_over(const c10::StorageImpl* alias_storage) const;
  const at::Tensor* member_original_of(const at::Tensor& alias) const;
  at::Tensor members_to_device(const at::Tensor& result);
  void write_back_members(const MemberAliased& entry);
  at::Tensor copy_to_device(const at::Tensor& result) const;

  const std::string_view op_name_;
  CallDevice operands_;
  std::optional<c10::Device> device_;
  c10::openreg::CurrentDeviceGuard guard_;  // set only if another device is current
  c10::SmallVector<Aliased, 4> aliased_;
  // How many aliases each device storage has, kept once a call has many (tensor lists).
  std::unordered_map<const c10::StorageImpl*, uint32_t> aliases_per_storage_;
  size_t counted_ = 0;  // aliased_ entries counted there
  c10::SmallVector<MemberAliased, 1> member_aliased_;
  std::list<at::Tensor> held_members_;  // stable addresses; allocates nothing while empty
  c10::DispatchKeySet kernel_keys_{c10::DispatchKey::CPU};
  // A call touches a few storages: linear scans beat hashing (and allocating) here.
  c10::SmallVector<std::pair<const c10::StorageImpl*, c10::Storage>, 2> adopted_;
  c10::SmallVector<std::pair<const c10::StorageImpl*, size_t>, 2> result_references_;
};

} // namespace at::native::openreg
