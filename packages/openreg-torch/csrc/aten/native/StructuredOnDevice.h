#pragma once

// DOC START: structured-on-device
// The lean lane of the hottest elementwise operators (the role of a CUDA backend's
// structured kernels): PyTorch's own structured class of the operator, e.g.
// at::native::structured_mul_out, runs with its outputs allocated on the device. Its
// meta() builds the TensorIterator over the openreg tensors themselves (shapes, strides,
// dtypes: no data is read), its impl() calls the operator's STUB for PrivateUse1, and
// openreg's entry for that STUB (CpuStubOnKernelView) runs the CPU's entry on the same
// iterator, launched with its operands pointing into the kernel view
// (launch_on_kernel_view). No alias tensors, no second dispatch, no result adoption: the
// per-operator work is the CPU's own plus one launch.
//
// CPU loops expect what a CPU TensorIterator guarantees: every operand of the common
// dtype (a CPU iterator makes promoted temporaries, a device one does not). The lane
// makes the one such temporary that is cheap, a Python number's (`x * 0.5`), as the CPU
// iterator does (cast_python_numbers). A call that still does not fit (mixed dtypes, a
// CPU tensor, a sparse or other-device operand) takes the operator's direct kernel
// instead (DirectKernel), whose results and errors are those of every other operator.
// DOC END: structured-on-device

#include <ATen/Dispatch.h>
#include <ATen/EmptyTensor.h>
#include <ATen/TensorIterator.h>
#include <ATen/core/IListRef.h>
#include <ATen/core/Tensor.h>
#include <c10/core/DynamicCast.h>
#include <c10/util/MaybeOwned.h>

#include <array>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "aten/native/Minimal.h"
#include "execution/DeviceLoops.h"
#include "execution/KernelView.h"
#include "execution/RunOnDevice.h"
#include "runtime/OpenRegFunctions.h"

namespace at::native::openreg {

namespace structured_detail {

// A Python number given for a tensor argument (the 0.5 of `x * 0.5`): PyTorch wraps it
// in a 0-dim CPU tensor, which a TensorIterator takes as a CPU scalar beside device
// operands, as on CUDA.
inline bool is_python_number(const at::TensorBase& tensor) {
  return tensor.defined() && tensor.unsafeGetTensorImpl()->is_wrapped_number();
}

// Whether a lane takes Python numbers: the STUB lane does (its TensorIterator reads them
// in host memory), the alias lane does not (its kernels read kernel-view aliases).
enum class Numbers { Refused, Accepted };

// A tensor argument a lean lane accepts: a dense openreg tensor of `device`, or a number.
template <Numbers numbers>
bool fits(const at::Tensor& tensor, c10::DeviceIndex device) {
  return (tensor.defined() && tensor.device().type() == c10::kPrivateUse1 &&
          tensor.device().index() == device && tensor.layout() == c10::kStrided) ||
         (numbers == Numbers::Accepted && is_python_number(tensor));
}
template <Numbers numbers>
bool fits(const std::optional<at::Tensor>& tensor, c10::DeviceIndex device) {
  return !tensor.has_value() || fits<numbers>(*tensor, device);
}
template <Numbers numbers>
bool fits(const at::ITensorListRef& tensors, c10::DeviceIndex device) {
  for (const at::Tensor& tensor : tensors) {
    if (!fits<Numbers::Refused>(tensor, device)) {
      return false;
    }
  }
  return true;
}
template <Numbers numbers, typename Value>
bool fits(const Value& /*value*/, c10::DeviceIndex /*device*/) {
  return true;  // scalars, flags
}

// An operator's argument as its structured class's meta() and impl() take it: optional
// scalars and tensors by reference (OptionalScalarRef, OptionalTensorRef), a SymInt as an
// int (topk's k; eager openreg calls carry concrete ones), as PyTorch's own generated CPU
// registration passes them.
template <typename Value>
const Value& structured_argument(const Value& value) {
  return value;
}
inline int64_t structured_argument(const c10::SymInt& value) {
  return value.guard_int(__FILE__, __LINE__);
}
inline at::OptionalScalarRef structured_argument(const std::optional<at::Scalar>& value) {
  return value.has_value() ? at::OptionalScalarRef(&*value) : at::OptionalScalarRef();
}
inline at::OptionalTensorRef structured_argument(const std::optional<at::Tensor>& value) {
  return value.has_value() && value->defined() ? at::OptionalTensorRef(*value)
                                               : at::OptionalTensorRef();
}

// The tensor that decides a call's device: the first argument, or the first tensor of a
// list given first (cat); nullptr for an empty list.
inline const at::Tensor* first_tensor(const at::Tensor& first) {
  return &first;
}
inline const at::Tensor* first_tensor(const at::ITensorListRef& first) {
  return first.size() == 0 ? nullptr : &*first.begin();
}

// The device of a call a lean lane takes (the first tensor an openreg tensor, every
// other tensor argument one of its device or, where accepted, a number), or nullopt.
template <Numbers numbers, typename First, typename... Rest>
std::optional<c10::Device> lane_device(const First& first_argument, const Rest&... rest) {
  const at::Tensor* first = first_tensor(first_argument);
  if (first != nullptr && first->defined() && first->device().type() == c10::kPrivateUse1 &&
      fits<numbers>(first_argument, first->device().index()) &&
      (fits<numbers>(rest, first->device().index()) && ...)) {
    return first->device();
  }
  return std::nullopt;
}

// The outputs a lane's CPU loops write: of the computation's dtype (arithmetic, whose CPU
// iterator would write another dtype through a temporary), or also bool (comparisons,
// whose CPU loops write bool results themselves).
enum class Outputs { CommonDtype, BoolOrCommonDtype };

// Whether PyTorch's CPU loops may run over `iter`: every input of the common dtype, an
// openreg tensor or a CPU scalar (TensorIterator admits CPU operands only as scalars;
// the loop reads them in host memory), and every output as `outputs` allows.
inline bool cpu_loops_fit(const TensorIteratorBase& iter, Outputs outputs) {
  for (int arg = 0; arg < iter.ntensors(); ++arg) {
    const bool bool_output = arg < iter.noutputs() && iter.dtype(arg) == c10::kBool &&
                             outputs == Outputs::BoolOrCommonDtype;
    if ((iter.dtype(arg) != iter.common_dtype() && !bool_output) ||
        (iter.device(arg).type() != c10::kPrivateUse1 && !iter.device(arg).is_cpu())) {
      return false;
    }
  }
  return true;
}

// The dtypes cast_python_numbers converts a number to (the standard ones).
inline bool castable(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kBool: case c10::kByte: case c10::kChar: case c10::kShort: case c10::kInt:
    case c10::kLong: case c10::kHalf: case c10::kBFloat16: case c10::kFloat:
    case c10::kDouble: case c10::kComplexHalf: case c10::kComplexFloat:
    case c10::kComplexDouble:
      return true;
    default:
      return false;
  }
}

// DOC START: cast-python-numbers
// CpuStructured with the step of a CPU TensorIterator's build that a device one skips,
// for Python numbers (see cast_python_numbers).
template <typename CpuStructured>
class WithNumbersCast : public CpuStructured {
 public:
  // After meta(), as PyTorch's compute_types does for a CPU iterator that promotes its
  // inputs (the binary operators'): a number of another dtype than the computation's
  // becomes a temporary of that dtype (the CPU's conversion, c10::fetch_and_cast), the
  // number itself kept as the operand's original, which the half and bfloat16 kernels
  // read at full precision. Run after meta()'s own checks, which see the number as given.
  void cast_python_numbers() {
    const c10::ScalarType dtype = this->common_dtype_;
    if (!castable(dtype)) {
      return;  // a number of another dtype left as it is takes the direct kernel
    }
    for (OperandInfo& operand : this->operands_) {
      if (operand.is_output || operand.current_dtype == dtype ||
          !is_python_number(operand.tensor_base())) {
        continue;
      }
      at::Tensor cast = at::detail::empty_cpu({}, dtype);
      const TensorBase& number = operand.tensor_base();
      AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND4(
          c10::kBool, c10::kHalf, c10::kBFloat16, c10::kComplexHalf, dtype,
          "openreg_cast_python_number", [&] {
            *cast.mutable_data_ptr<scalar_t>() =
                c10::fetch_and_cast<scalar_t>(number.scalar_type(), number.const_data_ptr());
          });
      operand.data = cast.mutable_data_ptr();
      operand.exchange_tensor(c10::MaybeOwned<TensorBase>::owned(std::move(cast)));
      operand.current_dtype = dtype;
      operand.target_dtype = dtype;
    }
  }
};
// DOC END: cast-python-numbers

// The outputs of an out-of-place call: fresh device tensors, allocated when meta() asks
// (two for max.dim, topk...).
template <typename CpuStructured>
class Functional final : public WithNumbersCast<CpuStructured> {
 public:
  void set_output_strided(int64_t index, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                          c10::TensorOptions options) override {
    set_output_raw_strided(index, sizes, strides, options);
  }
  void set_output_raw_strided(int64_t index, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                              c10::TensorOptions options) override {
    at::Tensor& output = outputs_.at(index);
    output = strides.empty()
        ? empty_memory_format(sizes, options.dtype().toScalarType(), std::nullopt,
                              options.device(), std::nullopt, options.memory_format_opt())
        : empty_strided(sizes, strides, options.dtype().toScalarType(), std::nullopt,
                        options.device(), std::nullopt);
    if constexpr (std::is_base_of_v<TensorIteratorBase, CpuStructured>) {
      // The iterator takes the output as an operand (MetaBase has nothing to do).
      CpuStructured::set_output_raw_strided(index, sizes, strides, options);
    }
  }
  const at::Tensor& maybe_get_output(int64_t index) override { return outputs_.at(index); }

  std::array<at::Tensor, 2> outputs_;
};

// The output of an in-place call: `self`, which must already have the result's shape
// and dtype (the checks and messages of PyTorch's in-place structured kernels).
template <typename CpuStructured>
class InPlace final : public WithNumbersCast<CpuStructured> {
 public:
  explicit InPlace(at::Tensor& self) : self_(self) {}

  void set_output_strided(int64_t index, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                          c10::TensorOptions options) override {
    set_output_raw_strided(index, sizes, strides, options);
  }
  void set_output_raw_strided(int64_t index, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                              c10::TensorOptions options) override {
    TORCH_CHECK(options.dtype() == self_.dtype(), "Bad in-place call: input tensor dtype ",
                self_.dtype(), " and output tensor dtype ", options.dtype(), " should match");
    TORCH_CHECK(options.device() == self_.device(), "Bad in-place call: input tensor device ",
                self_.device(), " and output tensor device ", options.device(),
                " should match");
    TORCH_CHECK(sizes == self_.sizes(), "Bad in-place call: input tensor size ",
                self_.sizes(), " and output tensor size ", sizes, " should match");
    CpuStructured::set_output_raw_strided(index, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t /*index*/) override { return self_; }

  at::Tensor& self_;
};

} // namespace structured_detail

// DOC START: leaves-to-direct-kernel
// Calls whose operands fit the STUB lane but whose impl() would do more than call its
// STUB: a branch that fills or copies the output through the dispatcher (clamp's NaN
// bounds, pow's exponents 0 and 1, floor's integer inputs), device work a running kernel
// must not issue. Such calls take the direct kernel. Specialised per structured class
// (aten/native/TensorCompare.h, Pow.h, UnaryOps.h); every other call is taken.
template <typename CpuStructured>
struct LeavesToDirectKernel {
  template <typename... Args>
  static bool call(const Args&... /*args*/) {
    return false;
  }
};
// DOC END: leaves-to-direct-kernel

// The kernel of operator Op (at::_ops::<op>, a functional or in-place overload) through
// CpuStructured (at::native::structured_<op>_out), falling back to DirectKernel<Op>.
template <typename Op, typename CpuStructured,
          structured_detail::Outputs outputs = structured_detail::Outputs::CommonDtype,
          typename Schema = typename Op::schema>
struct StructuredOnDevice;

template <typename Op, typename CpuStructured, structured_detail::Outputs outputs,
          typename... Args>
struct StructuredOnDevice<Op, CpuStructured, outputs, at::Tensor(Args...)> {
  static at::Tensor call(Args... args) {
    namespace detail = structured_detail;
    const auto device = detail::lane_device<detail::Numbers::Accepted>(args...);
    if (device && !LeavesToDirectKernel<CpuStructured>::call(args...)) {
      const c10::openreg::CurrentDeviceGuard guard(*device);
      detail::Functional<CpuStructured> op;
      op.meta(detail::structured_argument(args)...);
      op.cast_python_numbers();
      if (detail::cpu_loops_fit(op, outputs)) {
        launch_on_kernel_view(op, Op::name, [&] {
          op.impl(detail::structured_argument(args)..., op.outputs_[0]);
        });
        return std::move(op.outputs_[0]);
      }
    }
    return DirectKernel<Op>::call(args...);
  }
};

template <typename Op, typename CpuStructured, structured_detail::Outputs outputs,
          typename... Rest>
struct StructuredOnDevice<Op, CpuStructured, outputs, at::Tensor&(at::Tensor&, Rest...)> {
  static at::Tensor& call(at::Tensor& self, Rest... rest) {
    namespace detail = structured_detail;
    const auto device = detail::lane_device<detail::Numbers::Accepted>(self, rest...);
    if (device && !LeavesToDirectKernel<CpuStructured>::call(self, rest...)) {
      const c10::openreg::CurrentDeviceGuard guard(*device);
      detail::InPlace<CpuStructured> op(self);
      op.meta(self, detail::structured_argument(rest)...);
      op.cast_python_numbers();
      if (detail::cpu_loops_fit(op, outputs)) {
        launch_on_kernel_view(op, Op::name, [&] {
          op.impl(self, detail::structured_argument(rest)..., self);
        });
        return self;
      }
    }
    return DirectKernel<Op>::call(self, rest...);
  }
};

// How impl() takes the values a meta() precomputed (see StructuredOnAliases).
template <typename CpuStructured>
struct ImplWithPrecomputed;

// A lane whose result may be only its inputs' bytes one after another (cat) copies them
// itself in such calls, without aliases: launch() says whether it did. Other lanes never.
template <typename CpuStructured>
struct CopyOnly {
  template <typename... Args>
  static bool launch(const Args&... /*unused*/) {
    return false;
  }
};

namespace structured_detail {

template <typename Return>
struct OutputCount;
template <>
struct OutputCount<at::Tensor> : std::integral_constant<size_t, 1> {};
template <>
struct OutputCount<std::tuple<at::Tensor, at::Tensor>> : std::integral_constant<size_t, 2> {};

// What the alias lane's impl() reads for each argument: tensors as kernel-view aliases
// (copied, since input_kernel_alias's reference lasts until its next call), everything
// else as given; structured_argument() then passes each as impl() takes it.
inline at::Tensor kernel_argument(const at::Tensor& tensor) {
  return input_kernel_alias(tensor);
}
inline std::optional<at::Tensor> kernel_argument(const std::optional<at::Tensor>& tensor) {
  return tensor.has_value() && tensor->defined()
      ? std::optional<at::Tensor>(input_kernel_alias(*tensor)) : std::nullopt;
}
inline std::vector<at::Tensor> kernel_argument(const at::ITensorListRef& tensors) {
  std::vector<at::Tensor> aliases;
  aliases.reserve(tensors.size());
  for (const at::Tensor& tensor : tensors) {
    aliases.push_back(input_kernel_alias(tensor));
  }
  return aliases;
}
template <typename Value>
const Value& kernel_argument(const Value& value) {
  return value;
}

template <typename Op, size_t count, size_t... index, typename... KernelArgs>
void impl_on_aliases(Op& op, const std::array<at::Tensor, count>& outputs,
                     std::index_sequence<index...> /*outputs*/, const KernelArgs&... args) {
  op.impl(structured_argument(args)..., outputs[index]...);
}

} // namespace structured_detail

// DOC START: structured-on-aliases
// The same for structured kernels whose impl() reads its tensor arguments itself rather
// than a TensorIterator built by meta() (matrix products, softmax, reductions, cat,
// topk): meta() over the openreg tensors allocates the outputs on the device, then
// impl() runs in one launch on kernel-view aliases of the arguments and of those
// outputs, as the CPU's kernel would run on CPU tensors. Compared with the direct
// kernel, no result is adopted and meta() runs once. Calls with a CPU or other-device
// operand take the direct kernel.
//
// A meta() that returns precomputed values (cat's, max.dim's) hands them to impl() in
// place of some arguments: ImplWithPrecomputed<CpuStructured> says where, per operator
// (aten/native/StructuredPrecomputed.h).
template <typename Op, typename CpuStructured, typename Schema = typename Op::schema>
struct StructuredOnAliases;

template <typename Op, typename CpuStructured, typename Return, typename... Args>
struct StructuredOnAliases<Op, CpuStructured, Return(Args...)> {
  static_assert(!std::is_base_of_v<TensorIteratorBase, CpuStructured>,
                "a TensorIterator kernel reads the iterator meta() built: use "
                "StructuredOnDevice");
  static constexpr size_t kOutputs = structured_detail::OutputCount<Return>::value;

  static Return call(Args... args) {
    namespace detail = structured_detail;
    if (const auto device = detail::lane_device<detail::Numbers::Refused>(args...)) {
      const c10::openreg::CurrentDeviceGuard guard(*device);
      detail::Functional<CpuStructured> op;
      if constexpr (std::is_void_v<decltype(op.meta(detail::structured_argument(args)...))>) {
        op.meta(detail::structured_argument(args)...);
        launch_on_device(*device, Op::name, [&] {
          const auto outputs = output_aliases(op);
          detail::impl_on_aliases(op, outputs, std::make_index_sequence<kOutputs>{},
                                  detail::kernel_argument(args)...);
        });
      } else {
        const auto precomputed = op.meta(detail::structured_argument(args)...);
        if (!CopyOnly<CpuStructured>::launch(*device, Op::name, precomputed, op.outputs_[0],
                                             args...)) {
          launch_on_device(*device, Op::name, [&] {
            const auto outputs = output_aliases(op);
            ImplWithPrecomputed<CpuStructured>::impl(op, precomputed, outputs,
                                                     detail::kernel_argument(args)...);
          });
        }
      }
      if constexpr (kOutputs == 1) {
        return std::move(op.outputs_[0]);
      } else {
        return Return(std::move(op.outputs_[0]), std::move(op.outputs_[1]));
      }
    }
    return DirectKernel<Op>::call(args...);
  }

 private:
  // The outputs' aliases are made before the arguments' (which are held while later ones
  // are made): a fresh output takes the per-thread cache's next slot, and finding that
  // slot's alias unheld lets it be retargeted rather than rebuilt (with the arguments'
  // aliases made first, mm of 16x16 took 1.11-1.19 of the CPU's time; 1.07-1.12 so).
  static std::array<at::Tensor, kOutputs> output_aliases(
      const structured_detail::Functional<CpuStructured>& op) {
    std::array<at::Tensor, kOutputs> aliases;
    for (size_t index = 0; index < kOutputs; ++index) {
      aliases[index] = input_kernel_alias(op.outputs_[index]);
    }
    return aliases;
  }
};
// DOC END: structured-on-aliases

// DOC START: cpu-stub-on-kernel-view
// openreg's entry for a STUB (REGISTER_PRIVATEUSE1_DISPATCH): the CPU's entry, run on the
// iterator StructuredOnDevice launched on the kernel view. Any other openreg iterator
// holds device addresses a CPU loop cannot read: that is refused, not run.
template <typename Stub, Stub& stub, typename FnPtr = typename Stub::FnPtr>
struct CpuStubOnKernelView;

template <typename Stub, Stub& stub, typename... Args>
struct CpuStubOnKernelView<Stub, stub, void (*)(TensorIteratorBase&, Args...)> {
  static void run(TensorIteratorBase& iter, Args... args) {
    TORCH_CHECK(on_kernel_view(iter),
                "openreg: this STUB runs only inside openreg's structured kernels");
    stub(c10::DeviceType::CPU, iter, args...);
  }
};
// DOC END: cpu-stub-on-kernel-view

} // namespace at::native::openreg
