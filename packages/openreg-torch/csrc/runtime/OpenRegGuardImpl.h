#pragma once

// The device guard for PrivateUse1, after c10/cuda/impl/CUDAGuardImpl.h: PyTorch's
// generic guards (c10::DeviceGuard, c10::StreamGuard, torch.accelerator, autograd's
// device threads) switch devices and streams through it.

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "runtime/OpenRegMacros.h"

namespace c10::openreg {

// DOC START: guard-impl
struct OPENREG_TORCH_API OpenRegGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  static constexpr DeviceType static_type = DeviceType::PrivateUse1;

  OpenRegGuardImpl() = default;
  explicit OpenRegGuardImpl(DeviceType type);

  DeviceType type() const override;
  Device exchangeDevice(Device device) const override;
  Device getDevice() const override;
  void setDevice(Device device) const override;
  void uncheckedSetDevice(Device device) const noexcept override;
  DeviceIndex deviceCount() const noexcept override;
  // DOC END: guard-impl

  Stream getStream(Device device) const override;
  Stream getDefaultStream(Device device) const override;
  Stream getStreamFromGlobalPool(Device device, bool isHighPriority) const override;
  Stream getNewStream(Device device, int priority) const override;
  Stream exchangeStream(Stream stream) const override;
  void* getStreamNativeHandle(const Stream stream) const override;
  bool queryStream(const Stream& stream) const override;
  void synchronizeStream(const Stream& stream) const override;
  void synchronizeDevice(const DeviceIndex device_index) const override;

  void destroyEvent(void* event, const DeviceIndex device_index) const noexcept override;
  void record(void** event, const Stream& stream, const DeviceIndex device_index,
              const EventFlag flag) const override;
  void block(void* event, const Stream& stream) const override;
  bool queryEvent(void* event) const override;
  void synchronizeEvent(void* event) const override;
  double elapsedTime(void* start, void* end, const DeviceIndex device_index) const override;

  void recordDataPtrOnStream(const DataPtr& data_ptr, const Stream& stream) const override;

  // torch.accelerator.get_device_capability(): the dtypes openreg tensors may have.
  DeviceCapability getDeviceCapability(Device device) const override;
};

} // namespace c10::openreg
