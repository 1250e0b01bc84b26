#include "execution/CompiledKernel.h"

#include <dlfcn.h>

#include <c10/util/Exception.h>

#include "execution/DeviceLaunch.h"
#include "runtime/OpenRegStream.h"

namespace at::native::openreg {

namespace {
constexpr const char* kEntrySymbol = "openreg_kernel_entry";
} // namespace

CompiledKernel::CompiledKernel(std::string name, const std::string& library)
    : name_(std::move(name)) {
  library_ = dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD);
  TORCH_CHECK(library_ != nullptr, "openreg: compiled kernel ", name_, ": ", library,
              " is not loaded");
  entry_ = reinterpret_cast<Entry>(dlsym(library_, kEntrySymbol));
  TORCH_CHECK(entry_ != nullptr, "openreg: compiled kernel ", name_, " has no ", kEntrySymbol,
              " in ", library);
}

CompiledKernel::~CompiledKernel() {
  if (library_ != nullptr) {
    dlclose(library_);
  }
}

void CompiledKernel::launch(c10::DeviceIndex device, void* const* args) const {
  launch_kernel(c10::openreg::getCurrentOpenRegStream(device), name_,
                [this, args] { entry_(args); });
}

} // namespace at::native::openreg
