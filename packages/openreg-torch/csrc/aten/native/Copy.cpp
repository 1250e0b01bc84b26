// Copies between the host and openreg devices and between openreg devices: the
// `_copy_from` kernel behind every Tensor.copy_, .to() and .cpu().

#include "aten/native/Copy.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>

#include "aten/OpenRegTensorMeta.h"
#include "execution/DeviceCall.h"
#include "execution/DeviceLaunch.h"
#include "runtime/OpenRegFunctions.h"
#include "runtime/OpenRegHostAllocator.h"
#include "runtime/OpenRegStream.h"

namespace at::native::openreg {
namespace {

using c10::openreg::OpenRegStream;

bool is_device(const Tensor& tensor) {
  return tensor.device().type() == c10::kPrivateUse1;
}

// A copy that is one memcpy: same dtype, same bits, same dense layout.
bool is_flat_copy(const Tensor& src, const Tensor& dst) {
  return src.dtype() == dst.dtype() && src.is_conj() == dst.is_conj() &&
      src.is_neg() == dst.is_neg() && src.is_non_overlapping_and_dense() &&
      dst.is_non_overlapping_and_dense() && src.sizes() == dst.sizes() &&
      src.strides() == dst.strides();
}

orMemcpyKind kind_of(const Tensor& src, const Tensor& dst) {
  if (is_device(src)) {
    return is_device(dst) ? orMemcpyDeviceToDevice : orMemcpyDeviceToHost;
  }
  return orMemcpyHostToDevice;
}

// DOC START: copy-flat
void flat_copy(const Tensor& src, const Tensor& dst, const OpenRegStream& stream,
               bool non_blocking) {
  const orMemcpyKind kind = kind_of(src, dst);
  const Tensor& host = kind == orMemcpyHostToDevice ? src : dst;
  launch_copy(dst.data_ptr(), src.const_data_ptr(), src.nbytes(), kind, stream);
  if (kind == orMemcpyDeviceToDevice) {
    return;  // ordered on the stream like any other device work
  }
  if (non_blocking && c10::openreg::isPinnedPointer(host.const_data_ptr())) {
    // Truly asynchronous: keep the pinned block from being recycled mid-copy.
    c10::openreg::recordHostUse(host.const_data_ptr(), stream.unwrap());
  } else {
    stream.synchronize();  // a blocking copy returns with the data in place
  }
}
// DOC END: copy-flat

// Any other copy (dtype conversion, strided layouts, conjugation) is a kernel: PyTorch's
// CPU copy runs directly on the kernel views of the device tensors. Its operands may
// be on the host and on two devices: the device is decided by _copy_from.
void kernel_copy(const Tensor& src, const Tensor& dst, c10::Device device) {
  DeviceCall call("aten::_copy_from");
  call.use_device(device);
  const Tensor src_view = call.alias(src);
  const Tensor dst_view = call.alias_written(dst);
  call.launch([&] { dst_view.copy_(src_view); }, Allocations::Host);
}

} // namespace

// DOC START: copy-from
Tensor _copy_from(const Tensor& source, const Tensor& dst, bool non_blocking) {
  TORCH_CHECK(is_device(source) || is_device(dst), "openreg: _copy_from needs an openreg tensor");
  if (is_device(source) && is_device(dst)) {
    copy_layout_tag(source, dst);  // clone, .to("openreg:1"): the copy keeps the tag
  }
  if (dst.numel() == 0) {
    return dst;
  }
  // copy_ hands non-CPU devices to _copy_from before the CPU's TensorIterator would check
  // overlaps: the same checks, with the CPU's errors (a flat copy would just memmove).
  at::assert_no_internal_overlap(dst);
  at::assert_no_partial_overlap(dst, source);
  // copy_ hands over the source unbroadcast; expanding is a view, never a copy.
  const Tensor self = source.expand(dst.sizes());
  // The copy runs on the current stream of the destination device (the source's for
  // a copy to the host). A source on another device is synchronised first.
  const Tensor& device_side = is_device(dst) ? dst : self;
  const c10::DeviceGuard guard(device_side.device());
  const OpenRegStream stream = c10::openreg::getCurrentOpenRegStream(device_side.device().index());
  if (is_device(self) && is_device(dst) && self.device() != dst.device()) {
    c10::openreg::getCurrentOpenRegStream(self.device().index()).synchronize();
  }
  if (is_flat_copy(self, dst)) {
    flat_copy(self, dst, stream, non_blocking);
  } else {
    kernel_copy(self, dst, device_side.device());
  }
  return dst;
}
// DOC END: copy-from

namespace {

// Whether no two indices of `tensor` reach the same element (gaps allowed: a slice of a
// larger buffer, as LAPACK-backed kernels return).
bool has_no_internal_overlap(const Tensor& tensor) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of dims with size > 1
  for (int64_t dim = 0; dim < tensor.dim(); ++dim) {
    if (tensor.size(dim) > 1) {
      dims.emplace_back(tensor.stride(dim), tensor.size(dim));
    }
  }
  std::sort(dims.begin(), dims.end());
  int64_t reach = 0;  // the largest offset the smaller strides reach
  for (const auto& [stride, size] : dims) {
    if (stride <= reach) {
      return false;
    }
    reach += stride * (size - 1);
  }
  return true;
}

} // namespace

// The copy fallback writes an out= result back with this. A CPU kernel that resized its
// out tensor chose its layout too (column-major, or a slice of a larger buffer, for
// LAPACK results): the openreg out tensor gets the same one, as if it had run there.
Tensor _copy_from_and_resize(const Tensor& self, const Tensor& dst) {
  if (dst.sizes() != self.sizes()) {
    if (!self.is_contiguous() && self.numel() > 0 && has_no_internal_overlap(self)) {
      // Elements from the first to the last one `self` reaches.
      const auto extent = static_cast<int64_t>(
          at::detail::computeStorageNbytes(self.sizes(), self.strides(), 1));
      dst.resize_({extent});
      dst.as_strided_(self.sizes(), self.strides());
    } else {
      dst.resize_(self.sizes());
    }
  }
  return _copy_from(self, dst, /*non_blocking=*/false);
}

} // namespace at::native::openreg
