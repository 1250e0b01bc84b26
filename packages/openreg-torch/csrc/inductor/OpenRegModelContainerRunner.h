#pragma once

// Runs an AOTInductor package compiled for openreg (aoti_load_package): the twin of
// torch's AOTIModelContainerRunnerCuda. The model's code is Inductor's C++ wrapper for
// openreg (openreg_torch/_inductor/wrapper_cpp.py), which allocates its buffers on
// openreg, launches its kernels through the execution layer and moves its weights to the
// device on its first run.
//
// torch's AOTI runtime parses the model's device string itself and knows only cpu, cuda,
// xpu and mps (aoti_runtime/model_base.h, parse_device_str): the model is created as
// "cpu:N", which gives it its device index N, and the generated code names openreg
// (privateuse1) wherever it allocates.

#include <torch/csrc/inductor/aoti_runner/model_container_runner.h>

#include <memory>
#include <string>

#include "runtime/OpenRegMacros.h"

namespace at::native::openreg {

class OPENREG_TORCH_API OpenRegModelContainerRunner
    : public torch::inductor::AOTIModelContainerRunner {
 public:
  // `device` is "openreg" (the current device) or "openreg:N".
  OpenRegModelContainerRunner(const std::string& model_so_path, size_t num_models,
                              const std::string& device, const std::string& cubin_dir,
                              bool run_single_threaded);

  c10::DeviceIndex device_index() const {
    return device_index_;
  }

 protected:
  // Runs on the model's device: operators the model dispatches allocate there.
  std::vector<at::Tensor> run_impl(std::vector<AtenTensorHandle>& input_handles,
                                   void* stream_handle) override;

 private:
  OpenRegModelContainerRunner(const std::string& model_so_path, size_t num_models,
                              c10::DeviceIndex device_index, const std::string& cubin_dir,
                              bool run_single_threaded);

  c10::DeviceIndex device_index_;
};

// What torch's runner registry calls for the device key "openreg".
std::unique_ptr<torch::inductor::AOTIModelContainerRunner> create_openreg_model_runner(
    const std::string& model_so_path, size_t num_models, const std::string& device,
    const std::string& cubin_dir, bool run_single_threaded);

} // namespace at::native::openreg
