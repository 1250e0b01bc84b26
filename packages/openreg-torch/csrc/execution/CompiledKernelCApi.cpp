#include "execution/CompiledKernelCApi.h"

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <exception>
#include <string>

#include "execution/DeviceLaunch.h"
#include "execution/KernelView.h"
#include "runtime/OpenRegStream.h"

namespace {

thread_local std::string last_error;

// Runs `body`, turning an exception into the message the caller gets back.
template <typename Body>
const char* returning_error(Body&& body) {
  try {
    body();
    return nullptr;
  } catch (const c10::Error& error) {
    last_error = error.what_without_backtrace();
  } catch (const std::exception& error) {
    last_error = error.what();
  } catch (...) {
    last_error = "openreg: unknown error";
  }
  return last_error.c_str();
}

} // namespace

extern "C" {

const char* openreg_kernel_argument_address(void* tensor, int32_t* device, const char* kernel,
                                            int32_t argument, void** address) {
  return returning_error([&] {
    TORCH_CHECK(tensor != nullptr, "openreg: compiled kernel ", kernel,
                " got no tensor for argument ", argument);
    const at::Tensor& value = *static_cast<const at::Tensor*>(tensor);
    if (value.device().is_cpu()) {
      // Device code can read host memory.
      *address = value.data_ptr();
      return;
    }
    TORCH_CHECK(value.device().is_privateuseone(), "openreg: compiled kernel ", kernel,
                " got a tensor on ", value.device(), " for argument ", argument);
    const int32_t tensor_device = value.device().index();
    TORCH_CHECK(*device < 0 || *device == tensor_device, "openreg: compiled kernel ", kernel,
                " got tensors on openreg:", *device, " and openreg:", tensor_device,
                " (argument ", argument, ")");
    *device = tensor_device;
    *address = at::native::openreg::kernel_pointer(value.data_ptr());
  });
}

const char* openreg_launch_kernel_entry(int32_t device, const char* kernel,
                                        void (*entry)(void* const* args), void* const* args) {
  return returning_error([&] {
    TORCH_CHECK(entry != nullptr, "openreg: compiled kernel ", kernel, " has no entry point");
    at::native::openreg::launch_kernel(
        c10::openreg::getCurrentOpenRegStream(static_cast<c10::DeviceIndex>(device)), kernel,
        [entry, args] { entry(args); });
  });
}

} // extern "C"
