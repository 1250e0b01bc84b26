"""The runtime calls Inductor writes into openreg wrapper code: the twin of
torch/_inductor/codegen/cuda/device_op_overrides.py."""

from __future__ import annotations

from torch._inductor.codegen.common import DeviceOpOverrides


class OpenRegDeviceOpOverrides(DeviceOpOverrides):
    def import_get_raw_stream_as(self, name: str) -> str:
        return f"from openreg_torch._inductor.kernel_launch import get_raw_stream as {name}"

    def set_device(self, device_idx: int) -> str:
        # The device guard written just before already made the device current.
        return "pass"

    def synchronize(self) -> str:
        return "torch.openreg.synchronize()"

    def device_guard(self, device_idx: int) -> str:
        return f"torch.openreg.device({device_idx})"

    def current_stream(self) -> str:
        return "torch.openreg.current_stream()"

    def cpp_kernel_type(self) -> str:
        return "void*"
