#include "aten/OperatorRoutes.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "aten/native/Fallback.h"

namespace at::openreg {
namespace {

namespace native = at::native::openreg;

std::mutex routes_mutex;

std::unordered_map<std::string, Route>& routes() {
  static std::unordered_map<std::string, Route> table;
  return table;
}

// "aten::add.Tensor" -> ("aten::add", "Tensor"), checked to name an operator.
c10::OperatorHandle find_operator(const std::string& qualified_name) {
  const size_t separator = qualified_name.find("::");
  TORCH_CHECK(separator != std::string::npos, "openreg: expected a qualified operator name "
              "such as 'aten::add.Tensor', got '", qualified_name, "'");
  const size_t dot = qualified_name.find('.', separator);
  const c10::OperatorName name(
      qualified_name.substr(0, dot),
      dot == std::string::npos ? "" : qualified_name.substr(dot + 1));
  const auto op = c10::Dispatcher::singleton().findOp(name);
  TORCH_CHECK(op.has_value(), "openreg: no operator named '", qualified_name, "'");
  return *op;
}

const char* fallback_route_name() {
  switch (native::fallback_mode()) {
    case native::FallbackMode::ZeroCopy: return "zero-copy fallback";
    case native::FallbackMode::Copy: return "copy fallback";
    case native::FallbackMode::Selective: return "denied";
  }
  return "unknown";
}

} // namespace

void note_route(const std::string& qualified_name, Route route) {
  const std::lock_guard<std::mutex> lock(routes_mutex);
  routes()[qualified_name] = route;
}

// DOC START: route-of
std::string route_of(const std::string& qualified_name) {
  const c10::OperatorHandle op = find_operator(qualified_name);
  std::optional<Route> route;
  {
    const std::lock_guard<std::mutex> lock(routes_mutex);
    const auto found = routes().find(qualified_name);
    if (found != routes().end()) {
      route = found->second;
    }
  }
  if (!route.has_value()) {
    // Not registered by openreg-torch: another package's kernel (e.g. ops-extra's), a
    // composite that decomposes, or the global fallback.
    if (op.hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1)) {
      route = Route::OwnKernel;
    } else if (op.hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd) ||
               op.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) ||
               op.hasKernelForDispatchKey(
                   c10::DispatchKey::CompositeExplicitAutogradNonFunctional)) {
      route = Route::Composite;
    } else {
      route = Route::Fallback;
    }
  }
  switch (*route) {
    case Route::DirectKernel: return "direct kernel";
    case Route::Fallback: return fallback_route_name();
    case Route::Allowed:
      return native::fallback_mode() == native::FallbackMode::Copy ? "copy fallback"
                                                                   : "zero-copy fallback";
    case Route::Composite: return "composite";
    case Route::OwnKernel: return "own kernel";
    case Route::Denied: return "denied";
  }
  return "unknown";
}
// DOC END: route-of

// DOC START: selective-fallback
void register_fallback_for(const std::string& op_name, bool allow) {
  static std::mutex mutex;
  static std::vector<std::unique_ptr<torch::Library>> libraries;
  const std::lock_guard<std::mutex> lock(mutex);
  find_operator(op_name);
  const std::string ns = op_name.substr(0, op_name.find("::"));
  auto library = std::make_unique<torch::Library>(
      torch::Library::IMPL, ns, c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
  library->impl(op_name.c_str(),
                allow ? torch::CppFunction::makeFromBoxedFunction<&native::allowed_fallback>()
                      : torch::CppFunction::makeFromBoxedFunction<&native::denied_fallback>());
  libraries.push_back(std::move(library));
  note_route(op_name, allow ? Route::Allowed : Route::Denied);
}
// DOC END: selective-fallback

} // namespace at::openreg
