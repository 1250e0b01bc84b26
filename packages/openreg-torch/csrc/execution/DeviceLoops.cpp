#include "execution/DeviceLoops.h"

#include <c10/util/SmallVector.h>

#include "execution/DeviceCall.h"
#include "execution/KernelView.h"

namespace at::native::openreg {
namespace {

// Where a CPU loop reads operand `arg` of `iter`: the kernel view of its device memory,
// or, for a CPU scalar operand (TensorIterator lets one join a device computation), its
// host memory as it is.
void* kernel_address(const TensorIteratorBase& iter, int arg) {
  void* address = iter.data_ptr(arg);
  return iter.device(arg).is_cpu() ? address : kernel_pointer(address);
}

// How far the kernel view of an operand's memory is from its device view (zero for a
// CPU scalar operand).
std::ptrdiff_t kernel_view_shift(const TensorIteratorBase& iter, int arg) {
  return static_cast<char*>(kernel_address(iter, arg)) -
         static_cast<char*>(iter.data_ptr(arg));
}

} // namespace

// DOC START: launch-elementwise
void launch_elementwise(TensorIteratorBase& iter, std::string_view name, KernelLoop2d loop) {
  if (iter.numel() == 0) {
    return;  // nothing to touch (and an empty operand may have no memory at all)
  }
  // TensorIterator already checked its operands' devices (CPU scalars allowed).
  TORCH_CHECK(iter.device().type() == c10::kPrivateUse1, "openreg: ", name,
              " expected openreg tensors, got tensors on ", iter.device());
  DeviceCall call(name);
  call.use_device(iter.device());
  const int ntensors = iter.ntensors();
  c10::SmallVector<std::ptrdiff_t, 4> shift(ntensors);
  for (int arg = 0; arg < ntensors; ++arg) {
    shift[arg] = kernel_view_shift(iter, arg);
  }
  // The outputs exist already: nothing fresh to route.
  call.launch([&] {
    iter.for_each([&](char** data, const int64_t* strides, int64_t size0, int64_t size1) {
      c10::SmallVector<char*, 4> kernel_data;
      for (int arg = 0; arg < ntensors; ++arg) {
        kernel_data.push_back(data[arg] + shift[arg]);
      }
      loop(kernel_data.data(), strides, size0, size1);
    });
  }, Allocations::Host);
}
// DOC END: launch-elementwise

namespace {
// The iterator whose operands this thread's running kernel shifted into the kernel view.
OPENREG_HOT_THREAD_LOCAL const TensorIteratorBase* kernel_view_iterator = nullptr;

// Marks `iter` as this thread's kernel-view iterator for the scope's lifetime.
class KernelViewIteratorScope {
 public:
  explicit KernelViewIteratorScope(const TensorIteratorBase& iter)
      : outer_(kernel_view_iterator) {
    kernel_view_iterator = &iter;
  }
  ~KernelViewIteratorScope() { kernel_view_iterator = outer_; }
  KernelViewIteratorScope(const KernelViewIteratorScope&) = delete;
  KernelViewIteratorScope& operator=(const KernelViewIteratorScope&) = delete;

 private:
  const TensorIteratorBase* outer_;
};

// Points the device operands of `iter` into the kernel view for the scope's lifetime,
// then back at device memory (a CPU scalar operand stays in host memory, which kernels
// read; an empty operand has nothing to read, and its address may lie just past its
// memory). A CPU loop may have dropped a trailing operand (a scalar it read): then each
// remaining one is matched by its address on the way back.
class OperandsOnKernelView {
 public:
  explicit OperandsOnKernelView(TensorIteratorBase& iter)
      : iter_(iter), ntensors_(iter.ntensors()) {
    for (int arg = 0; arg < ntensors_; ++arg) {
      void* device_address = iter.data_ptr(arg);
      // Nearly always this process's own device memory, translated without asking
      // what the operand is; an empty operand there is shifted too and never read.
      void* kernel = known_kernel_pointer(device_address);
      if (kernel == nullptr) {
        if (iter.device(arg).is_cpu() || iter.tensor_base(arg).numel() == 0) {
          continue;
        }
        kernel = kernel_pointer(device_address);
      }
      shifted_.push_back({arg, device_address, kernel});
      iter.unsafe_replace_operand(arg, kernel);
    }
  }
  ~OperandsOnKernelView() {
    if (iter_.ntensors() == ntensors_) {
      for (const Shifted& operand : shifted_) {
        iter_.unsafe_replace_operand(operand.arg, operand.device_address);
      }
      return;
    }
    for (int arg = 0; arg < iter_.ntensors(); ++arg) {
      void* address = iter_.data_ptr(arg);
      for (const Shifted& operand : shifted_) {
        if (address == operand.kernel_address) {
          iter_.unsafe_replace_operand(arg, operand.device_address);
          break;
        }
      }
    }
  }
  OperandsOnKernelView(const OperandsOnKernelView&) = delete;
  OperandsOnKernelView& operator=(const OperandsOnKernelView&) = delete;

 private:
  struct Shifted {
    int arg;
    void* device_address;
    void* kernel_address;
  };
  TensorIteratorBase& iter_;
  const int ntensors_;
  c10::SmallVector<Shifted, 4> shifted_;
};
} // namespace

bool on_kernel_view(const TensorIteratorBase& iter) {
  return kernel_view_iterator == &iter;
}

// DOC START: launch-on-kernel-view
void launch_on_kernel_view(TensorIteratorBase& iter, std::string_view name,
                           c10::function_ref<void()> kernel) {
  // Launched even when empty: a CPU entry's prologue may check its scalars and raise (a
  // bound that overflows the dtype), as it does on the CPU.
  // The launch returns once the kernel has run, so the operands can be shifted here.
  const OperandsOnKernelView shifted(iter);
  launch_kernel(c10::openreg::getCurrentOpenRegStream(iter.device().index()), name, [&] {
    const KernelViewIteratorScope scope(iter);  // on the thread that runs the kernel
    kernel();
  });
}
// DOC END: launch-on-kernel-view

void launch_on_device(c10::Device device, std::string_view name,
                      c10::function_ref<void()> kernel) {
  launch_kernel(c10::openreg::getCurrentOpenRegStream(device.index()), name, [&] { kernel(); });
}

} // namespace at::native::openreg
