#pragma once

// Direct kernels: the zero-copy fallback's work, unboxed, for the hottest operators.
// The boxed path copies every argument onto a stack (for a tensor Python holds, each
// copy takes the GIL to pin its Python object) and walks the schema at run time;
// DirectKernel<Op> is generated from the operator's C++ signature (at::_ops::<op>), so
// its arguments pass by reference and their handling is decided at compile time.
// The rules (devices, aliases, results) are the fallback's: CallDevice and AliasedCall.

#include <ATen/core/Tensor.h>
#include <ATen/core/List.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/ArrayRef.h>

#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "aten/native/AliasedCall.h"
#include "aten/native/CallDevice.h"

namespace at::native::openreg {

namespace direct {

// Pass 1: the device of the call, from every tensor argument.
inline void note(CallDevice& device, const at::Tensor& tensor) {
  device.note_operand(tensor);
}
inline void note(CallDevice& device, const std::optional<at::Tensor>& tensor) {
  if (tensor.has_value()) {
    device.note_operand(*tensor);
  }
}
inline void note(CallDevice& device, at::TensorList tensors) {
  for (const at::Tensor& tensor : tensors) {
    device.note_operand(tensor);
  }
}
template <typename Value>
void note(CallDevice& /*device*/, const Value& /*value*/) {
  static_assert(!std::is_same_v<std::decay_t<Value>, std::optional<at::Generator>>,
                "random operators need generator substitution: keep them on the fallback");
}

// Pass 2: what the CPU kernel receives for each argument.
inline at::Tensor to_kernel(AliasedCall& call, const at::Tensor& tensor) {
  return call.alias(tensor);
}
// A mutable argument: `self` of an in-place operator, whose storage never changes
// (out= variants, whose outputs may be resized, stay on the fallback).
inline at::Tensor to_kernel(AliasedCall& call, at::Tensor& tensor) {
  return call.alias(tensor);
}
inline std::optional<at::Tensor> to_kernel(AliasedCall& call,
                                           const std::optional<at::Tensor>& tensor) {
  return tensor.has_value() ? std::optional<at::Tensor>(call.alias(*tensor)) : std::nullopt;
}
inline std::vector<at::Tensor> to_kernel(AliasedCall& call, at::TensorList tensors) {
  std::vector<at::Tensor> aliases;
  aliases.reserve(tensors.size());
  for (const at::Tensor& tensor : tensors) {
    aliases.push_back(call.alias(tensor));
  }
  return aliases;
}
template <typename Value>
const Value& to_kernel(AliasedCall& /*call*/, const Value& value) {
  return value;  // scalars, sizes, flags: as they are
}

// Results, by return type: fresh tensors adopted, in-place results are the caller's
// own tensors. count() sees every result before to_device() maps any (AliasedCall).
template <typename Return>
struct Results;

template <>
struct Results<at::Tensor> {
  static void count(AliasedCall& call, const at::Tensor& result) { call.count_result(result); }
  static at::Tensor to_device(AliasedCall& call, const at::Tensor& result) {
    return call.to_device(result);
  }
};

template <>
struct Results<at::Tensor&> {
  static void count(AliasedCall& /*call*/, const at::Tensor& /*result*/) {}
  static at::Tensor& to_device(AliasedCall& call, const at::Tensor& result) {
    const at::Tensor* original = call.original_of(result);
    TORCH_INTERNAL_ASSERT(original != nullptr, "openreg: an in-place result is not an argument");
    return const_cast<at::Tensor&>(*original);  // the caller's own mutable argument
  }
};

template <>
struct Results<std::vector<at::Tensor>> {
  static void count(AliasedCall& call, const std::vector<at::Tensor>& results) {
    for (const at::Tensor& result : results) {
      call.count_result(result);
    }
  }
  static std::vector<at::Tensor> to_device(AliasedCall& call,
                                           const std::vector<at::Tensor>& results) {
    std::vector<at::Tensor> mapped;
    mapped.reserve(results.size());
    for (const at::Tensor& result : results) {
      mapped.push_back(call.to_device(result));
    }
    return mapped;
  }
};

template <typename... Elements>
struct Results<std::tuple<Elements...>> {
  using Tuple = std::tuple<Elements...>;
  static void count(AliasedCall& call, const Tuple& results) {
    count(call, results, std::index_sequence_for<Elements...>{});
  }
  static Tuple to_device(AliasedCall& call, const Tuple& results) {
    return to_device(call, results, std::index_sequence_for<Elements...>{});
  }

 private:
  template <size_t... Index>
  static void count(AliasedCall& call, const Tuple& results, std::index_sequence<Index...>) {
    (Results<Elements>::count(call, std::get<Index>(results)), ...);
  }
  template <size_t... Index>
  static Tuple to_device(AliasedCall& call, const Tuple& results,
                         std::index_sequence<Index...>) {
    return Tuple(Results<Elements>::to_device(call, std::get<Index>(results))...);
  }
};

} // namespace direct

// DOC START: direct-kernel
template <typename Op, typename Schema = typename Op::schema>
struct DirectKernel;

template <typename Op, typename Return, typename... Args>
struct DirectKernel<Op, Return(Args...)> {
  static_assert(std::string_view(Op::overload_name).find("out") == std::string_view::npos,
                "out= variants may resize their outputs: keep them on the fallback");

  static Return call(Args... args) {
    CallDevice call_device(Op::name);
    (direct::note(call_device, args), ...);
    const std::optional<c10::Device> device = call_device.device();
    TORCH_CHECK(device.has_value(), "openreg: ", Op::name, " got no openreg tensor");
    const c10::DeviceGuard guard(*device);
    AliasedCall call(*device, Op::name);
    // Braced initialisation evaluates left to right: aliases are made in argument order.
    std::tuple<decltype(direct::to_kernel(call, args))...> kernel_args{
        direct::to_kernel(call, args)...};
    auto run_on_cpu = [&]() -> Return {
      return std::apply(
          [](auto&... kernel_arg) -> Return {
            return Op::redispatch(c10::DispatchKeySet(c10::DispatchKey::CPU), kernel_arg...);
          },
          kernel_args);
    };
    if constexpr (std::is_void_v<Return>) {
      call.launch(run_on_cpu, /*route_allocations=*/false);
    } else {
      // Return may be a reference (in-place) or hold references (out= tuples).
      std::optional<std::conditional_t<std::is_reference_v<Return>,
                                       std::reference_wrapper<std::remove_reference_t<Return>>,
                                       Return>>
          result;
      call.launch([&] { result.emplace(run_on_cpu()); },
                  /*route_allocations=*/!std::is_reference_v<Return>);
      const auto& value = [&]() -> const auto& {
        if constexpr (std::is_reference_v<Return>) {
          return result->get();
        } else {
          return *result;
        }
      }();
      direct::Results<Return>::count(call, value);
      return direct::Results<Return>::to_device(call, value);
    }
  }
};
// DOC END: direct-kernel

} // namespace at::native::openreg
