#pragma once

// Which route serves an operator on openreg, as the registration decided it: the
// answer of openreg_torch.fallback.route_of("aten::add.Tensor").

#include <string>

#include "runtime/OpenRegMacros.h"

namespace at::openreg {

// DOC START: operator-routes
enum class Route {
  DirectKernel,  // an unboxed kernel running the CPU kernel on device memory
  Fallback,      // the boxed fallback: zero-copy or copy by OPENREG_FALLBACK; denied
                 // in selective mode
  Allowed,       // the boxed fallback even in selective mode (fallback.allow())
  Composite,     // PyTorch's composite kernel: decomposed into other operators
  OwnKernel,     // an openreg kernel of its own (factories, copies, convolution...)
  Denied,        // raises NotImplementedError (selective mode, or fallback.deny())
};
// DOC END: operator-routes

// Records the route the registration gave `qualified_name` ("aten::add.Tensor").
void note_route(const std::string& qualified_name, Route route);

// The route serving `qualified_name` now, by name: "direct kernel", "zero-copy
// fallback", "copy fallback", "composite", "own kernel" or "denied".
OPENREG_TORCH_API std::string route_of(const std::string& qualified_name);

// Selective fallback, per operator (m.impl): `allow` lets `op_name` fall back (in the
// zero-copy or copy way, whichever the mode's default is) even in selective mode;
// `deny` makes it raise NotImplementedError even when everything else falls back.
OPENREG_TORCH_API void register_fallback_for(const std::string& op_name, bool allow);

} // namespace at::openreg
