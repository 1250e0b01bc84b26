"""The host side of openreg graphs: the twin of Inductor's PythonWrapperCodegen for CUDA.

Generated wrapper code is Inductor's own, with two differences for openreg kernels:
each kernel is loaded as an ``openreg_torch._C._CompiledKernel`` (kernel_launch.py)
rather than as the CPU's Python binding, and calling it launches the kernel on the
current openreg stream. Buffers are allocated with ``empty_strided(..., device='openreg')``,
from openreg's caching allocator; device guards are ``torch.openreg.device``.
"""

from __future__ import annotations

from typing import Any

from torch._inductor.codegen.wrapper import PythonWrapperCodegen, SubgraphPythonWrapperCodegen
from torch._inductor.stream_constants import DEFAULT_STREAM, DEFAULT_STREAM_IDX
from torch._inductor.stream_utils import get_stream_name
from torch._inductor.virtualized import V

_PYBINDING_CALL = "async_compile.cpp_pybinding("
_OPENREG_KERNEL_IMPORT = "from openreg_torch._inductor.kernel_launch import openreg_cpp_kernel"
_EXTERNAL_OBJECT_IMPORT = (
    "from torch._dynamo.graph_bytecode_inputs import get_external_object_by_index")


def _on_openreg() -> bool:
    device = V.graph.get_current_device_or_throw()
    return device.type == "openreg"


class _OpenRegKernels:
    """What differs for openreg kernels, in a graph's wrapper and in its subgraphs' (the
    branches of torch.cond, the bodies of while_loop, scan, map and nested compile regions)."""

    # DOC START: wrapper-define-kernel
    def define_kernel(
        self,
        kernel_name: str,
        kernel_body: str,
        metadata: str | None = None,
        gpu: bool = True,
        cpp_definition: str | None = None,
    ):
        # A C++ kernel for openreg: compiled as for the CPU, loaded as a launcher.
        if not gpu and kernel_body.startswith(_PYBINDING_CALL) and _on_openreg():
            arguments = kernel_body[len(_PYBINDING_CALL):]
            kernel_body = f"openreg_cpp_kernel(async_compile, {kernel_name!r}, {arguments}"
        super().define_kernel(kernel_name, kernel_body, metadata, gpu, cpp_definition)
    # DOC END: wrapper-define-kernel

    def _generate_kernel_call_helper(self, kernel_name: str, call_args, *, device=None,
                                     triton=True, **kwargs):
        device = device or V.graph.get_current_device_or_throw()
        if not triton and device.type == "openreg":
            # The launcher takes the arguments as the CPU binding does.
            self.writeline(self.wrap_kernel_call(kernel_name, call_args))
            return
        super()._generate_kernel_call_helper(kernel_name, call_args, device=device,
                                             triton=triton, **kwargs)

    # DOC START: wrapper-devices-and-streams
    # Inductor writes device guards (and with them the user streams of a graph) only for
    # GPU device types (utils.device_need_guard). openreg runs without a guard, like the
    # CPU: each allocation names its device, and a stream is looked up where its
    # context is entered.
    def make_allocation(self, name, device, dtype, shape, stride, allocation_shape=None,
                        is_pinned=False):
        line = super().make_allocation(name, device, dtype, shape, stride, allocation_shape,
                                       is_pinned)
        if device.type == "openreg" and device.index is not None:
            line = line.replace("device='openreg'", f"device='openreg:{device.index}'", 1)
        return line

    def codegen_cuda_stream_enter(self, stream_idx: int):
        if V.graph.device_type == "openreg":
            if stream_idx == DEFAULT_STREAM_IDX:
                self.writeline(f"{DEFAULT_STREAM} = torch.openreg.current_stream()")
            else:
                if not self.imports.contains(_EXTERNAL_OBJECT_IMPORT):
                    self.imports.writeline(_EXTERNAL_OBJECT_IMPORT)
                user_object = V.graph.scheduler.stream_idx_to_user_obj_idx[stream_idx]
                self.writeline(f"{get_stream_name(stream_idx)} = "
                               f"get_external_object_by_index({user_object})")
        return super().codegen_cuda_stream_enter(stream_idx)
    # DOC END: wrapper-devices-and-streams


class OpenRegPythonWrapperCodegen(_OpenRegKernels, PythonWrapperCodegen):
    @staticmethod
    def create(
        is_subgraph: bool,
        subgraph_name: str | None,
        parent_wrapper: PythonWrapperCodegen | None,
        partition_signatures: Any = None,
    ):
        if is_subgraph:
            assert subgraph_name is not None and parent_wrapper is not None
            return OpenRegSubgraphPythonWrapperCodegen(subgraph_name, parent_wrapper,
                                                       partition_signatures)
        return OpenRegPythonWrapperCodegen()

    def write_header(self) -> None:
        super().write_header()
        self.imports.writeline(_OPENREG_KERNEL_IMPORT)


class OpenRegSubgraphPythonWrapperCodegen(_OpenRegKernels, SubgraphPythonWrapperCodegen):
    """A subgraph's wrapper: its kernels are openreg launchers too (the root graph's header
    imports what they need)."""
