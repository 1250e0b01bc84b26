#include "distributed/CollectiveLaunch.h"

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

} // namespace

void LaunchRecord::copy_back() {
  for (auto& [alias, host] : copy_back_) {
    alias.copy_(host);
  }
  copy_back_.clear();
}

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
