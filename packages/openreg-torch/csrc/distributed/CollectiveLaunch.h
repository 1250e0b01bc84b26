#pragma once

// How openreg's c10d backend reaches device memory and streams, in one place: through
// the execution layer (kernel-view aliases, one launch per collective). Gloo only ever sees CPU tensors: the
// kernel-view aliases of the device tensors (zero-copy), or host copies of them when gloo
// cannot use the memory as it is (non-contiguous tensors, PREMUL_SUM's scaled inputs).
// Its call is issued when the current stream of the device reaches it. A sparse COO
// tensor is handed over as a CPU sparse tensor over its members (indices, values).

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Stream.h>

#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/OpenRegMacros.h"

namespace c10d::openreg {

// What an issued collective leaves to do once gloo has finished.
class OPENREG_TORCH_API LaunchRecord {
 public:
  // Moves results gloo wrote into host copies back into device memory, and the members
  // gloo gave the CPU sparse tensors into their openreg tensors. Call once, after the
  // transport completed successfully.
  void copy_back();
  // Completes a future over device tensors; its ready event is recorded on the stream the
  // collective was issued on (consumers then order their streams after it).
  void complete(c10::ivalue::Future& future, c10::IValue value) const;

 private:
  friend class CollectiveLaunch;
  explicit LaunchRecord(c10::Stream stream) : stream_(stream) {}

  c10::Stream stream_;
  std::vector<std::pair<at::Tensor, at::Tensor>> copy_back_; // (device alias, host copy)
  std::vector<std::pair<at::Tensor, at::Tensor>> sparse_back_; // (openreg sparse, CPU sparse)
};

// DOC START: collective-launch
class OPENREG_TORCH_API CollectiveLaunch {
 public:
  // Issues on the current stream of `device` (an openreg device with an index).
  explicit CollectiveLaunch(c10::Device device);

  // The CPU tensor gloo reads for `tensor`. `scale` (a one-element tensor, CPU or
  // openreg) multiplies a host copy first (PREMUL_SUM).
  at::Tensor input(const at::Tensor& tensor, const at::Tensor& scale = {});
  // The CPU tensor gloo writes for `tensor`.
  at::Tensor output(const at::Tensor& tensor);
  // Both, for in-place collectives (all_reduce, broadcast, reduce, recv).
  at::Tensor inout(const at::Tensor& tensor, const at::Tensor& scale = {});
  // For a sparse COO `tensor` reduced in place (all_reduce): a CPU sparse tensor over its
  // members' kernel views. Gloo replaces that tensor's members by the coalesced result
  // (new CPU tensors, nnz may differ); once it has finished, `tensor` gets copies of
  // them in device memory, as copy_ from a CPU sparse tensor would give it.
  at::Tensor sparse_inout(const at::Tensor& tensor);

  // Runs `issue` (which hands the tensors above to gloo) once all work issued so far on
  // the stream has completed; later work on the stream starts after `issue` returned.
  // `op` names the launch (e.g. "allreduce" -> "c10d::allreduce").
  void run(std::string_view op, const std::function<void()>& issue);

  LaunchRecord record() &&;

 private:
  struct CopyIn {
    at::Tensor source; // kernel-view alias of the device tensor
    at::Tensor host;
    at::Tensor scale;
  };
  at::Tensor stage(const at::Tensor& tensor, bool read, bool write, const at::Tensor& scale);

  c10::Device device_;
  c10::Stream stream_;
  std::vector<CopyIn> copy_in_;
  LaunchRecord record_;
};
// DOC END: collective-launch

} // namespace c10d::openreg
