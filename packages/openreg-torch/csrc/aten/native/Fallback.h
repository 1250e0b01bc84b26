#pragma once

// The boxed fallback: how every operator without an openreg kernel runs.

#include <ATen/core/dispatch/Dispatcher.h>

#include "execution/DeviceCall.h"
#include "runtime/OpenRegMacros.h"

namespace at::native::openreg {

// DOC START: fallback-modes
// How operators without an openreg kernel run, chosen by OPENREG_FALLBACK:
//   zero-copy (default)  the CPU kernel runs directly on device memory;
//   copy                 the seed's cpu_fallback: copy in, run on the CPU, copy back;
//   selective            no operator falls back unless allowed one by one
//                        (register_fallback_for), others raise NotImplementedError.
enum class FallbackMode { ZeroCopy, Copy, Selective };
OPENREG_TORCH_API FallbackMode fallback_mode();
OPENREG_TORCH_API const char* fallback_mode_name(FallbackMode mode);
// DOC END: fallback-modes

// The boxed function registered for every operator (m.fallback): dispatches by mode.
void openreg_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// Per-operator fallbacks (m.impl): `allowed_fallback` falls back (in the zero-copy or
// copy way, whichever the mode's default is) even in selective mode; `denied_fallback`
// raises NotImplementedError even when everything else falls back.
void allowed_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);
void denied_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// Every operator on a quantized openreg tensor (QuantizedPrivateUse1): openreg has no
// quantized tensors, and says so instead of PyTorch's "Could not run ... Quantizedopenreg".
void quantized_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// Every operator on a sparse openreg tensor (SparsePrivateUse1) without a kernel of its
// own: openreg_fallback, except for torch.distributed's collectives (c10d::*). c10d has
// sparse kernels for all_reduce only, SparseCUDA's among them; openreg registers the
// SparsePrivateUse1 one (distributed/Ops.h). Any other collective on a sparse tensor
// raises, as on CUDA, instead of running the CPU's kernel, which would ask the group for
// its CPU backend and write into a CPU alias of the tensor.
void sparse_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// Foreach operators: the whole list in one fallback call when it lives on one device.
void foreach_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// The copy fallback of the seed documents: inputs are copied to the CPU, the CPU
// kernel runs, results are copied back (at::native::cpu_fallback), after the
// device-consistency checks and generator substitution every openreg kernel needs.
void cpu_copy_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// The default: the CPU kernel runs directly on device memory (ZeroCopyFallback.cpp).
void zero_copy_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// Step 1 of the execution layer for a boxed call: notes the stack's operands on `call`
// and finds its device (rejecting tensors on two openreg devices and CPU tensors with
// dims), then replaces openreg generators (or a missing one) by the CPU generator they
// wrap. Returns the device the operator runs on (nullopt if none).
std::optional<c10::Device> prepare_stack(const c10::OperatorHandle& op, torch::jit::Stack* stack,
                                         DeviceCall& call);

} // namespace at::native::openreg
