#pragma once

// The PrivateUse1 hooks, after ATen/cuda/detail/CUDAHooks.h: how PyTorch's core
// (at::globalContext(), pin_memory, generators, autograd) reaches the openreg runtime.

#include <ATen/detail/PrivateUse1HooksInterface.h>

#include "runtime/OpenRegMacros.h"

namespace c10::openreg {

// DOC START: hooks
struct OPENREG_TORCH_API OpenRegHooks final : public at::PrivateUse1HooksInterface {
  // High priority: PyTorch's runtime relies on these.
  void init() const override;
  bool hasPrimaryContext(DeviceIndex device_index) const override;
  const at::Generator& getDefaultGenerator(DeviceIndex device_index) const override;
  at::Generator getNewGenerator(DeviceIndex device_index) const override;
  at::Device getDeviceFromPtr(void* data) const override;
  c10::Allocator* getPinnedMemoryAllocator() const override;
  bool isPinnedPtr(const void* data) const override;

  // Low priority: device management and utilities.
  bool isBuilt() const override;
  bool isAvailable() const override;
  DeviceIndex deviceCount() const override;
  void setCurrentDevice(DeviceIndex device) const override;
  DeviceIndex getCurrentDevice() const override;
  DeviceIndex exchangeDevice(DeviceIndex device) const override;
  DeviceIndex maybeExchangeDevice(DeviceIndex device) const override;

  // storage.resize_() on openreg storages.
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_bytes) const override;
};
// DOC END: hooks

} // namespace c10::openreg
