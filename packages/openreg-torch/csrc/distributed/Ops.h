#pragma once

// c10d's operators where c10d registers no kernel for openreg tensors. c10d serves dense
// openreg tensors itself (its PrivateUse1 kernels call the group's PrivateUse1 backend),
// and sparse ones on the CPU and CUDA only: all_reduce is its one collective with sparse
// kernels (SparseCPU, SparseCUDA). openreg adds the SparsePrivateUse1 one, as CUDA's
// (registered in aten/RegisterOpenReg.cpp).

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <optional>
#include <tuple>
#include <vector>

#include "runtime/OpenRegMacros.h"

namespace c10d::openreg {

// c10d::allreduce_ of sparse openreg tensors: the group's openreg backend's
// allreduce_sparse (orccl's: gloo's sparse all_reduce, the result written back in place).
OPENREG_TORCH_API std::tuple<std::vector<at::Tensor>, c10::intrusive_ptr<Work>>
allreduce_sparse_(at::TensorList tensors, const c10::intrusive_ptr<ProcessGroup>& process_group,
                  const c10::intrusive_ptr<ReduceOp>& reduce_op,
                  const std::optional<at::Tensor>& sparse_indices, bool async_op,
                  int64_t timeout);

} // namespace c10d::openreg
