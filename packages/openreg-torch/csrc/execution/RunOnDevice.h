#pragma once

// The unboxed adapter of the execution layer: run_on_device<Return>(name, cpu_kernel,
// args...) runs `cpu_kernel` on the kernel views of `args` as one DeviceCall. Its
// argument handling is decided at compile time from the C++ types, so arguments pass
// by reference (the boxed fallback copies each onto a stack, and for a tensor Python
// holds each copy takes the GIL). Used by the direct kernels (DirectKernel<Op>) and by
// kernels that call a different CPU function than their operator (convolution, .item()).

#include <ATen/core/Tensor.h>
#include <ATen/core/IListRef.h>
#include <ATen/core/List.h>
#include <c10/util/ArrayRef.h>

#include <functional>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "execution/DeviceCall.h"
#include "runtime/OpenRegGenerator.h"

namespace at::native::openreg {

namespace run_on_device_detail {

// Step 1: every tensor argument is an operand of the call.
inline void note(DeviceCall& call, const at::Tensor& tensor) {
  call.note_operand(tensor);
}
inline void note(DeviceCall& call, const std::optional<at::Tensor>& tensor) {
  if (tensor.has_value()) {
    call.note_operand(*tensor);
  }
}
template <typename List>
void note_each(DeviceCall& call, const List& tensors) {
  for (const at::Tensor& tensor : tensors) {
    call.note_operand(tensor);
  }
}
inline void note(DeviceCall& call, at::TensorList tensors) {
  note_each(call, tensors);
}
inline void note(DeviceCall& call, const at::ITensorListRef& tensors) {
  note_each(call, tensors);
}
inline void note(DeviceCall& call, const std::optional<at::Generator>& generator) {
  if (generator.has_value()) {
    call.note_generator(*generator);
  }
}
template <typename Value>
void note(DeviceCall& /*call*/, const Value& /*value*/) {}

// Step 2: what the CPU kernel receives for each argument.
inline at::Tensor to_kernel(DeviceCall& call, const at::Tensor& tensor) {
  return call.alias(tensor);
}
// A mutable argument: `self` of an in-place operator, whose storage never changes
// (out= variants, whose outputs may be resized, stay on the boxed fallback).
inline at::Tensor to_kernel(DeviceCall& call, at::Tensor& tensor) {
  return call.alias_written(tensor);
}
inline std::optional<at::Tensor> to_kernel(DeviceCall& call,
                                           const std::optional<at::Tensor>& tensor) {
  return tensor.has_value() ? std::optional<at::Tensor>(call.alias(*tensor)) : std::nullopt;
}
template <typename List>
std::vector<at::Tensor> aliases_of_each(DeviceCall& call, const List& tensors) {
  std::vector<at::Tensor> aliases;
  aliases.reserve(tensors.size());
  for (const at::Tensor& tensor : tensors) {
    aliases.push_back(call.alias(tensor));
  }
  return aliases;
}
inline std::vector<at::Tensor> to_kernel(DeviceCall& call, at::TensorList tensors) {
  return aliases_of_each(call, tensors);
}
// The kernel's ITensorListRef views this vector, which lives as long as the call.
inline std::vector<at::Tensor> to_kernel(DeviceCall& call, const at::ITensorListRef& tensors) {
  return aliases_of_each(call, tensors);
}
// A random operator's generator: the CPU one its kernel draws from (kernel_generator).
inline std::optional<at::Generator> to_kernel(DeviceCall& call,
                                              const std::optional<at::Generator>& generator) {
  return c10::openreg::kernel_generator(generator, call.device().index(), call.op_name());
}
template <typename Value>
const Value& to_kernel(DeviceCall& /*call*/, const Value& value) {
  return value;  // scalars, sizes, flags: as they are
}

// Step 4, by return type: fresh tensors adopted, in-place results are the caller's
// own tensors, anything else (Scalar, int) as it is. count() sees every result before
// to_device() maps any (DeviceCall's contract).
template <typename Return>
struct Results {
  static constexpr bool fresh_tensors = false;
  static void count(DeviceCall& /*call*/, const Return& /*result*/) {}
  static Return to_device(DeviceCall& /*call*/, const Return& result) { return result; }
};

template <>
struct Results<at::Tensor> {
  static constexpr bool fresh_tensors = true;
  static void count(DeviceCall& call, const at::Tensor& result) { call.count_result(result); }
  static at::Tensor to_device(DeviceCall& call, const at::Tensor& result) {
    return call.to_device(result);
  }
};

template <>
struct Results<at::Tensor&> {
  static constexpr bool fresh_tensors = false;
  static void count(DeviceCall& /*call*/, const at::Tensor& /*result*/) {}
  static at::Tensor& to_device(DeviceCall& call, const at::Tensor& result) {
    const at::Tensor* original = call.original_of(result);
    TORCH_INTERNAL_ASSERT(original != nullptr, "openreg: an in-place result is not an argument");
    return const_cast<at::Tensor&>(*original);  // the caller's own mutable argument
  }
};

template <>
struct Results<std::vector<at::Tensor>> {
  static constexpr bool fresh_tensors = true;
  static void count(DeviceCall& call, const std::vector<at::Tensor>& results) {
    for (const at::Tensor& result : results) {
      call.count_result(result);
    }
  }
  static std::vector<at::Tensor> to_device(DeviceCall& call,
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
  static constexpr bool fresh_tensors = (Results<Elements>::fresh_tensors || ...);
  static void count(DeviceCall& call, const Tuple& results) {
    count(call, results, std::index_sequence_for<Elements...>{});
  }
  static Tuple to_device(DeviceCall& call, const Tuple& results) {
    return to_device(call, results, std::index_sequence_for<Elements...>{});
  }

 private:
  template <size_t... Index>
  static void count(DeviceCall& call, const Tuple& results, std::index_sequence<Index...>) {
    (Results<Elements>::count(call, std::get<Index>(results)), ...);
  }
  template <size_t... Index>
  static Tuple to_device(DeviceCall& call, const Tuple& results,
                         std::index_sequence<Index...>) {
    return Tuple(Results<Elements>::to_device(call, std::get<Index>(results))...);
  }
};

} // namespace run_on_device_detail

// DOC START: run-on-device
template <typename Return, typename CpuKernel, typename... Args>
Return run_on_device(std::string_view op_name, CpuKernel&& cpu_kernel, Args&&... args) {
  namespace detail = run_on_device_detail;
  DeviceCall call(op_name);
  (detail::note(call, args), ...);
  TORCH_CHECK(call.find_device().has_value(), "openreg: ", op_name, " got no openreg tensor");
  // Braced initialisation evaluates left to right: aliases are made in argument order.
  std::tuple<decltype(detail::to_kernel(call, args))...> kernel_args{
      detail::to_kernel(call, args)...};
  auto run_on_cpu = [&]() -> Return { return std::apply(cpu_kernel, kernel_args); };
  constexpr Allocations allocations = detail::Results<Return>::fresh_tensors
      ? Allocations::Routed : Allocations::Host;
  if constexpr (std::is_void_v<Return>) {
    call.launch(run_on_cpu, allocations);
  } else {
    // Return may be a reference (in place) or hold references.
    std::optional<std::conditional_t<std::is_reference_v<Return>,
                                     std::reference_wrapper<std::remove_reference_t<Return>>,
                                     Return>>
        result;
    call.launch([&] { result.emplace(run_on_cpu()); }, allocations);
    const auto& value = [&]() -> const auto& {
      if constexpr (std::is_reference_v<Return>) {
        return result->get();
      } else {
        return *result;
      }
    }();
    detail::Results<Return>::count(call, value);
    return detail::Results<Return>::to_device(call, value);
  }
}
// DOC END: run-on-device

// DOC START: direct-kernel
// The direct kernel of operator Op (at::_ops::<op>): its CPU kernel on device data.
template <typename Op, typename Schema = typename Op::schema>
struct DirectKernel;

template <typename Op, typename Return, typename... Args>
struct DirectKernel<Op, Return(Args...)> {
  static_assert(std::string_view(Op::overload_name).find("out") == std::string_view::npos,
                "out= variants may resize their outputs: keep them on the fallback");

  static Return call(Args... args) {
    return run_on_device<Return>(
        Op::name,
        [](auto&... kernel_args) -> Return {
          return Op::redispatch(c10::DispatchKeySet(c10::DispatchKey::CPU), kernel_args...);
        },
        args...);
  }
};
// DOC END: direct-kernel

} // namespace at::native::openreg
