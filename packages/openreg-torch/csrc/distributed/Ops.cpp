#include "distributed/Ops.h"

#include <chrono>
#include <utility>

namespace c10d::openreg {

// DOC START: allreduce-sparse-op
std::tuple<std::vector<at::Tensor>, c10::intrusive_ptr<Work>> allreduce_sparse_(
    at::TensorList tensors, const c10::intrusive_ptr<ProcessGroup>& process_group,
    const c10::intrusive_ptr<ReduceOp>& reduce_op, const std::optional<at::Tensor>& sparse_indices,
    bool async_op, int64_t timeout) {
  std::vector<at::Tensor> tensor_vec = tensors.vec();
  AllreduceOptions options;
  options.reduceOp = *reduce_op;
  options.timeout = std::chrono::milliseconds(timeout);
  options.asyncOp = async_op;
  options.sparseIndices = sparse_indices;
  c10::intrusive_ptr<Work> work =
      process_group->getBackend(c10::DeviceType::PrivateUse1)->allreduce_sparse(tensor_vec, options);
  // As c10d's kernels: the (in-place) tensors come back as the operator's outputs.
  return {std::move(tensor_vec), std::move(work)};
}
// DOC END: allreduce-sparse-op

} // namespace c10d::openreg
