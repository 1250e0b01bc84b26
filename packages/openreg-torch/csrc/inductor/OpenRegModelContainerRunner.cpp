#include "inductor/OpenRegModelContainerRunner.h"

#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include "runtime/OpenRegFunctions.h"

namespace at::native::openreg {

namespace {

// "openreg" (the current device) or "openreg:N".
c10::DeviceIndex parse_device(const std::string& device) {
  const c10::Device parsed(device);
  TORCH_CHECK(parsed.is_privateuseone(), "openreg: an openreg AOTInductor model runs on an "
              "openreg device, got ", device);
  const c10::DeviceIndex index =
      parsed.has_index() ? parsed.index() : c10::openreg::current_device();
  TORCH_CHECK(index >= 0 && index < c10::openreg::device_count(), "openreg: no device ", device,
              " (", static_cast<int>(c10::openreg::device_count()), " openreg devices)");
  return index;
}

} // namespace

OpenRegModelContainerRunner::OpenRegModelContainerRunner(const std::string& model_so_path,
                                                         size_t num_models,
                                                         const std::string& device,
                                                         const std::string& cubin_dir,
                                                         bool run_single_threaded)
    : OpenRegModelContainerRunner(model_so_path, num_models, parse_device(device), cubin_dir,
                                  run_single_threaded) {}

// DOC START: aoti-runner-device
// torch's AOTI runtime parses the device name itself and knows cpu, cuda, xpu and mps
// only: "cpu:N" gives the model its device index; its code allocates on openreg:N.
OpenRegModelContainerRunner::OpenRegModelContainerRunner(const std::string& model_so_path,
                                                         size_t num_models,
                                                         c10::DeviceIndex device_index,
                                                         const std::string& cubin_dir,
                                                         bool run_single_threaded)
    : AOTIModelContainerRunner(model_so_path, num_models,
                               "cpu:" + std::to_string(static_cast<int>(device_index)),
                               cubin_dir, run_single_threaded),
      device_index_(device_index) {}
// DOC END: aoti-runner-device

std::vector<at::Tensor> OpenRegModelContainerRunner::run_impl(
    std::vector<AtenTensorHandle>& input_handles, void* stream_handle) {
  const c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, device_index_));
  return AOTIModelContainerRunner::run_impl(input_handles, stream_handle);
}

std::unique_ptr<torch::inductor::AOTIModelContainerRunner> create_openreg_model_runner(
    const std::string& model_so_path, size_t num_models, const std::string& device,
    const std::string& cubin_dir, bool run_single_threaded) {
  return std::make_unique<OpenRegModelContainerRunner>(model_so_path, num_models, device,
                                                       cubin_dir, run_single_threaded);
}

} // namespace at::native::openreg
