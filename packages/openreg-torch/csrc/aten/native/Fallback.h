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

// PyTorch serves structured operators (exp, add, sum, ...) on PrivateUse1 with a
// generic composite that computes the output's metadata, allocates it, then calls the
// operator's out= variant (which falls back). Running the CPU's own functional and
// in-place kernels through the fallback instead builds the iterator once, not twice.
// Registers the fallback per operator for every such aten operator (not in selective
// mode, where nothing may fall back unless allowed). Returns how many were routed.
OPENREG_TORCH_API size_t route_structured_ops_to_fallback();

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
