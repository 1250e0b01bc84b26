#pragma once

// The boxed fallback: how every operator without an openreg kernel runs.

#include <ATen/core/dispatch/Dispatcher.h>

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

// Selective fallback, per operator (m.impl): `allow` lets `op_name` fall back (in the
// zero-copy or copy way, whichever the mode's default is) even in selective mode;
// `deny` makes it raise NotImplementedError even when everything else falls back.
OPENREG_TORCH_API void register_fallback_for(const std::string& op_name, bool allow);

// PyTorch serves some operators on PrivateUse1 with a composite kernel although the CPU
// has its own; running the CPU kernel through the fallback is faster or more exact:
//   - structured operators (exp, add, sum...): the composite computes the output's
//     metadata, allocates it, then calls the out= variant (which falls back); the CPU's
//     functional and in-place kernels build their iterator once, not twice;
//   - CompositeExplicitAutograd operators with a CPU kernel (native_layer_norm, addr,
//     _stack...): the composite is a decomposition, not the CPU's numerics;
//   - foreach operators: one call for the whole list instead of one per tensor.
// Registers the fallback per operator for every such aten operator that has no openreg
// kernel (not in selective mode, where nothing may fall back unless allowed). Returns
// how many were routed.
OPENREG_TORCH_API size_t route_composite_ops_to_fallback();

// Registers direct (unboxed) kernels for the hottest operators (DirectKernels.cpp);
// zero-copy mode only: the copy and selective modes keep the seed's behaviour for
// every operator. Call before route_composite_ops_to_fallback. Returns how many.
OPENREG_TORCH_API size_t register_direct_kernels();

// The copy fallback of the seed documents: inputs are copied to the CPU, the CPU
// kernel runs, results are copied back (at::native::cpu_fallback), after the
// device-consistency checks and generator substitution every openreg kernel needs.
void cpu_copy_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// The default: the CPU kernel runs directly on device memory (ZeroCopyFallback.cpp).
void zero_copy_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// Inspects the stack before a CPU kernel runs on openreg data: rejects tensors on two
// different openreg devices, and replaces openreg generators (or a missing one) by the
// CPU generator they wrap. Returns the device the operator runs on (nullopt if none).
std::optional<c10::Device> prepare_stack(const c10::OperatorHandle& op,
                                         torch::jit::Stack* stack);

} // namespace at::native::openreg
