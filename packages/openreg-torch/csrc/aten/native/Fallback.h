#pragma once

// The boxed fallback: how every operator without an openreg kernel runs.

#include <ATen/core/dispatch/Dispatcher.h>

namespace at::native::openreg {

// The copy fallback of the seed documents: inputs are copied to the CPU, the CPU
// kernel runs, results are copied back (at::native::cpu_fallback), after the
// device-consistency checks and generator substitution every openreg kernel needs.
void cpu_copy_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// Inspects the stack before a CPU kernel runs on openreg data: rejects tensors on two
// different openreg devices, and replaces openreg generators (or a missing one) by the
// CPU generator they wrap. Returns the device the operator runs on (nullopt if none).
std::optional<c10::Device> prepare_stack(const c10::OperatorHandle& op,
                                         torch::jit::Stack* stack);

} // namespace at::native::openreg
