#include "distributed/CollectiveLaunch.h"

#include <ATen/native/SparseTensorUtils.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mul.h>
#include <c10/core/StorageImpl.h>
#include <c10/core/StreamGuard.h>

#include <string>

#include "execution/DeviceCall.h"
#include "execution/KernelView.h"
#include "runtime/OpenRegStream.h"

namespace c10d::openreg {
namespace {

void release_storage(void* context) {
  delete static_cast<c10::Storage*>(context);
}

// The kernel-view alias of `tensor`, owning a reference to the device storage: gloo may
// keep the alias after the call returns (queued work, send/recv), as it keeps CPU tensors,
// and the device memory must live as long as it does.
at::Tensor owning_alias(const at::Tensor& tensor) {
  at::Tensor alias = at::native::openreg::kernel_alias(tensor);
  c10::StorageImpl* storage = alias.storage().unsafeGetStorageImpl();
  void* data = const_cast<void*>(storage->data());
  storage->set_data_ptr_noswap(c10::DataPtr(data, new c10::Storage(tensor.storage()),
                                            &release_storage, c10::Device(c10::kCPU)));
  return alias;
}

// A copy of the CPU tensor `host` in device memory, made through the kernel view as the
// dense results are (no launch: gloo's thread may be the caller).
at::Tensor device_copy(const at::Tensor& host, c10::Device device) {
  at::Tensor copy = at::empty(host.sizes(), host.options().device(device));
  at::native::openreg::kernel_alias(copy).copy_(host);
  return copy;
}

} // namespace

// DOC START: collective-copy-back
void LaunchRecord::copy_back() {
  for (auto& [alias, host] : copy_back_) {
    alias.copy_(host);
  }
  copy_back_.clear();
  if (sparse_back_.empty()) {
    return;
  }
  // The new members come from the caching allocator on the collective's stream.
  const c10::StreamGuard on_stream(stream_);
  for (auto& [tensor, host] : sparse_back_) {
    // What copy_ between sparse tensors does (gloo's own write-back on the CPU): the
    // tensor takes new members; the old ones are left to whoever else holds them.
    at::Tensor indices = device_copy(host._indices(), tensor.device());
    at::Tensor values = device_copy(host._values(), tensor.device());
    at::sparse::alias_into_sparse(tensor, indices, values);
    at::sparse::get_sparse_impl(tensor)->set_coalesced(host.is_coalesced());
  }
  sparse_back_.clear();
}
// DOC END: collective-copy-back

void LaunchRecord::complete(c10::ivalue::Future& future, c10::IValue value) const {
  const c10::StreamGuard guard(stream_);
  future.markCompleted(std::move(value));
}

CollectiveLaunch::CollectiveLaunch(c10::Device device)
    : device_(device),
      stream_(c10::openreg::getCurrentOpenRegStream(device.index()).unwrap()),
      record_(stream_) {}

at::Tensor CollectiveLaunch::input(const at::Tensor& tensor, const at::Tensor& scale) {
  return stage(tensor, /*read=*/true, /*write=*/false, scale);
}

at::Tensor CollectiveLaunch::output(const at::Tensor& tensor) {
  return stage(tensor, /*read=*/false, /*write=*/true, {});
}

at::Tensor CollectiveLaunch::inout(const at::Tensor& tensor, const at::Tensor& scale) {
  return stage(tensor, /*read=*/true, /*write=*/true, scale);
}

// DOC START: collective-stage
at::Tensor CollectiveLaunch::stage(const at::Tensor& tensor, bool read, bool write,
                                   const at::Tensor& scale) {
  at::Tensor alias = owning_alias(tensor);
  // Gloo treats a tensor as one flat buffer: a strided view would be read wrongly.
  if (alias.is_contiguous() && !scale.defined()) {
    return alias;
  }
  at::Tensor host = at::empty(alias.sizes(), alias.options());
  if (read) {
    at::Tensor factor = scale;
    if (factor.defined() && !factor.is_cpu()) {
      factor = owning_alias(factor);
    }
    copy_in_.push_back({alias, host, factor.defined() ? factor.reshape({}) : factor});
  }
  if (write) {
    record_.copy_back_.emplace_back(alias, host);
  }
  return host;
}
// DOC END: collective-stage

at::Tensor CollectiveLaunch::sparse_inout(const at::Tensor& tensor) {
  at::Tensor indices = input(tensor._indices());
  at::Tensor values = input(tensor._values());
  at::Tensor host = at::_sparse_coo_tensor_with_dims_and_tensors(
      tensor.sparse_dim(), tensor.dense_dim(), tensor.sizes(), indices, values,
      values.options().layout(c10::kSparse), tensor.is_coalesced());
  record_.sparse_back_.emplace_back(tensor, host);
  return host;
}

// DOC START: collective-run
void CollectiveLaunch::run(std::string_view op, const std::function<void()>& issue) {
  // One launch of the execution layer, named after the collective, on the stream
  // captured when the collective was called.
  const std::string name = "c10d::" + std::string(op);
  const c10::StreamGuard on_stream(stream_);
  at::native::openreg::DeviceCall call(name);
  call.use_device(device_);
  call.launch([&] {
    for (CopyIn& copy : copy_in_) {
      if (copy.scale.defined()) {
        at::mul_out(copy.host, copy.source, copy.scale);
      } else {
        copy.host.copy_(copy.source);
      }
    }
    issue();
  }, at::native::openreg::Allocations::Host);
}
// DOC END: collective-run

LaunchRecord CollectiveLaunch::record() && {
  return std::move(record_);
}

} // namespace c10d::openreg
