"""The C++ host side of openreg graphs (``cpp_wrapper=True`` and AOTInductor): the twin
of Inductor's CppWrapperGpu for CUDA, built on its CppWrapperCpu.

The C++ wrapper calls each kernel in the same source file directly with
``(T*)(tensor.data_ptr())``; on openreg that pointer is a device address the host must
not dereference. Here each call translates every openreg tensor to its kernel-view
address and runs the kernel through the execution layer's launch point on the current
stream of the tensors' device, under the kernel's name (``cpp_fused_...``): the same as
the Python wrapper's launcher (kernel_launch.py), through the C entry points of
``csrc/execution/CompiledKernelCApi.h``. The generated code finds those in the loaded
libopenreg_torch.so at run time, so it builds and links exactly as the CPU's does.

Buffers the wrapper allocates are ``aoti_torch_empty_strided(..., privateuse1, index)``,
from openreg's caching allocator. Extern matrix multiplies call openreg's C shim
(``csrc/inductor/CShimOpenReg.cpp``); every other operator Inductor leaves to ATen is
dispatched at run time by name, as the C++ wrapper does for operators without a shim.
An AOTInductor model also moves its weights to the device on its first run (see
``_write_constants_unpacking``) and runs with openreg's model runner
(``csrc/inductor/OpenRegModelContainerRunner``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch._inductor import config
from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu
from torch._inductor.virtualized import V

# What the generated C++ needs from libopenreg_torch, looked up once in the library the
# process already loaded (so the wrapper builds and links like the CPU's).
_RUNTIME = r"""
// openreg: kernels launch through libopenreg_torch (execution/CompiledKernelCApi.h).
#include <dlfcn.h>
#include <mutex>
#include <stdexcept>
#include <string>
namespace openreg_wrapper {
inline void* symbol(const char* name) {
    static void* const library = dlopen("libopenreg_torch.so", RTLD_NOW | RTLD_NOLOAD);
    if (library == nullptr) {
        throw std::runtime_error(
            "openreg: this compiled graph runs on openreg, but libopenreg_torch.so is not "
            "loaded in this process: import openreg_torch first");
    }
    void* found = dlsym(library, name);
    if (found == nullptr) {
        throw std::runtime_error(std::string("openreg: libopenreg_torch.so has no ") + name);
    }
    return found;
}
inline void check(const char* error) {
    if (error != nullptr) {
        throw std::runtime_error(error);
    }
}
// The kernel-view address of a kernel's tensor argument; `device` collects their device.
inline void* argument(AtenTensorHandle tensor, int32_t& device, const char* kernel,
                      int32_t index) {
    using Function = const char* (*)(void*, int32_t*, const char*, int32_t, void**);
    static const auto address_of =
        reinterpret_cast<Function>(symbol("openreg_kernel_argument_address"));
    void* address = nullptr;
    check(address_of(tensor, &device, kernel, index, &address));
    return address;
}
// Runs entry(args) as `kernel` on the current stream of openreg `device`.
inline void launch(int32_t device, const char* kernel, void (*entry)(void* const*),
                   void* const* args) {
    using Function = const char* (*)(int32_t, const char*, void (*)(void* const*),
                                     void* const*);
    static const auto launch_entry =
        reinterpret_cast<Function>(symbol("openreg_launch_kernel_entry"));
    check(launch_entry(device, kernel, entry, args));
}
// A copy of `tensor` on openreg `device` (AOTInductor weights, which torch's runtime can
// only load into host memory).
inline torch::aot_inductor::RAIIAtenTensorHandle to_device(AtenTensorHandle tensor,
                                                          int32_t device) {
    int64_t dim = 0;
    int64_t* sizes = nullptr;
    int64_t* strides = nullptr;
    int32_t dtype = 0;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_dim(tensor, &dim));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_sizes(tensor, &sizes));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_strides(tensor, &strides));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_dtype(tensor, &dtype));
    AtenTensorHandle copy = nullptr;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(
        dim, sizes, strides, dtype, aoti_torch_device_type_privateuse1(), device, &copy));
    torch::aot_inductor::RAIIAtenTensorHandle owned(copy);
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_copy_(copy, tensor, 0));
    return owned;
}
inline bool on_host(AtenTensorHandle tensor) {
    int32_t device_type = 0;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_device_type(tensor, &device_type));
    return device_type == aoti_torch_device_type_cpu();
}
} // namespace openreg_wrapper
"""

# openreg's C shim (csrc/inductor/CShimOpenReg.cpp): the extern kernels Inductor calls by
# shim name on an openreg buffer, with their C parameters.
_TENSOR = "AtenTensorHandle"
_C_SHIM = {
    "mm_out": (_TENSOR, _TENSOR, _TENSOR),
    "addmm_out": (_TENSOR, _TENSOR, _TENSOR, _TENSOR, "double", "double"),
    "bmm_out": (_TENSOR, _TENSOR, _TENSOR),
    "baddbmm_out": (_TENSOR, _TENSOR, _TENSOR, _TENSOR, "double", "double"),
    "_int_mm_out": (_TENSOR, _TENSOR, _TENSOR),
    "convolution": (_TENSOR, _TENSOR, "AtenTensorHandle*", "const int64_t*", "int64_t",
                    "const int64_t*", "int64_t", "const int64_t*", "int64_t", "int32_t",
                    "const int64_t*", "int64_t", "int64_t", "AtenTensorHandle*"),
    # Called as fallback kernels (generate_fallback_kernel): their integer results.
    "_scaled_dot_product_fused_attention_overrideable": (
        _TENSOR, _TENSOR, _TENSOR, "AtenTensorHandle*", "double", "int32_t", "int32_t",
        "double*", *["AtenTensorHandle*"] * 4, "int64_t*", "int64_t*",
        *["AtenTensorHandle*"] * 3),
    "_scaled_dot_product_fused_attention_overrideable_backward": (
        *[_TENSOR] * 5, "const int32_t*", "int64_t", *[_TENSOR] * 4, "int64_t", "int64_t",
        "double", "int32_t", _TENSOR, _TENSOR, "double*", *["AtenTensorHandle*"] * 4),
}


def _c_shim_forwarder(op: str, parameter_types: tuple[str, ...]) -> str:
    name = f"aoti_torch_openreg_{op}"
    parameters = ", ".join(f"{t} p{i}" for i, t in enumerate(parameter_types))
    arguments = ", ".join(f"p{i}" for i in range(len(parameter_types)))
    return (
        f"[[maybe_unused]] static AOTITorchError {name}({parameters}) {{\n"
        f"    using Function = AOTITorchError (*)({', '.join(parameter_types)});\n"
        f"    static const auto shim = reinterpret_cast<Function>("
        f'openreg_wrapper::symbol("{name}"));\n'
        f"    return shim({arguments});\n"
        "}\n"
    )


_HOST = torch.device("cpu")


def _scalar_type(arg_type: str) -> str:
    return arg_type.replace("const ", "").strip()


# DOC START: aoti-precompiled-header
# AOTInductor precompiles the header torch ships for the model's device type,
# torch/csrc/inductor/aoti_include/<device>.h (codecache.py, _get_cpp_wrapper_header),
# which exists for cpu, cuda, mps and xpu only.
_AOTI_HEADER_ERROR = (
    "openreg: AOTInductor precompiles torch/csrc/inductor/aoti_include/<device>.h, which "
    "torch ships only for its own devices; compile openreg models with "
    "inductor_configs={'aot_inductor.precompile_headers': False}")
# DOC END: aoti-precompiled-header


class OpenRegCppWrapperCodegen(CppWrapperCpu):
    def __init__(self) -> None:
        self.device = "openreg"
        # The weights of an AOTInductor model as the runtime loads them (see
        # codegen_model_constructor).
        self._weights_on_host = False
        super().__init__()
        if V.graph.aot_mode and config.aot_inductor.precompile_headers:
            raise NotImplementedError(_AOTI_HEADER_ERROR)
        # openreg's kernels are the CPU's C++ kernels, in this same source file.
        self.needs_vec_isa = True

    @staticmethod
    def create(
        is_subgraph: bool,
        subgraph_name: str | None,
        parent_wrapper: Any,
        partition_signatures: Any = None,
    ):
        return OpenRegCppWrapperCodegen()

    def add_device_include(self, device: str) -> None:
        if device != "openreg":
            return super().add_device_include(device)
        if device in self.included_devices:
            return
        self.included_devices.add(device)
        # The host code and kernels are the CPU's; launches go through libopenreg_torch.
        super().add_device_include("cpu")
        self.header.splice(_RUNTIME)
        for op, parameter_types in _C_SHIM.items():
            self.header.splice(_c_shim_forwarder(op, parameter_types))

    def codegen_device(self, device: torch.device) -> str:
        if device.type != "openreg" or self._weights_on_host:
            return super().codegen_device(device if device.type != "openreg" else _HOST)
        self.used_cached_devices.add("privateuse1")
        return f"cached_torch_device_type_privateuse1, {device.index if device.index else 0}"

    # DOC START: cpp-wrapper-kernel-call
    def _generate_kernel_call_helper(self, kernel_name: str, call_args, *, device=None,
                                     triton=True, arg_types=None, **kwargs):
        device = device or V.graph.get_current_device_or_throw()
        if triton or device.type != "openreg":
            return super()._generate_kernel_call_helper(
                kernel_name, call_args, device=device, triton=triton, arg_types=arg_types,
                **kwargs)
        # One address per argument: a tensor's kernel-view address, or where a scalar is
        # stored; a captureless lambda unpacks them into the kernel's typed signature.
        lines = ["{", "int32_t openreg_device = -1;"]
        addresses, unpacked = [], []
        for index, (arg, arg_type) in enumerate(zip(call_args, arg_types)):
            if isinstance(arg_type, str) and "*" in arg_type:
                addresses.append(f'openreg_wrapper::argument({arg}, openreg_device, '
                                 f'"{kernel_name}", {index})')
                unpacked.append(f"static_cast<{arg_type}>(args[{index}])")
            else:
                scalar = _scalar_type(str(arg_type))
                lines.append(f"{scalar} openreg_scalar_{index} = {arg};")
                addresses.append(f"&openreg_scalar_{index}")
                unpacked.append(f"*static_cast<{scalar}*>(args[{index}])")
        lines.append(f"void* openreg_args[] = {{{', '.join(addresses)}}};")
        lines.append(
            f'openreg_wrapper::launch(openreg_device, "{kernel_name}", '
            f"[](void* const* args) {{ {kernel_name}({', '.join(unpacked)}); }}, "
            "openreg_args);")
        lines.append("}")
        self.writelines(lines)
    # DOC END: cpp-wrapper-kernel-call

    def generate_c_shim_extern_kernel_call(self, kernel: str, args, device: str, **kwargs):
        if device == "openreg":
            op = self.get_c_shim_func_name(kernel, device)[len("aoti_torch_openreg_"):]
            if not kernel.startswith("aoti_torch_") and op not in _C_SHIM:
                raise NotImplementedError(
                    f"openreg: the C++ wrapper has no C shim for {kernel} on openreg "
                    f"(openreg's shim has {', '.join(sorted(_C_SHIM))}); use the default "
                    "Python wrapper for this graph")
        return super().generate_c_shim_extern_kernel_call(kernel, args, device, **kwargs)

    def _generate_scatter_fallback(self, output, inputs, cpp_kernel_name, python_kernel_name,
                                   src_is_tensor, reduce, kwargs, device):
        # torch writes scatter_reduce as a call of the device's generated C shim
        # (aoti_torch_<device>_scatter_reduce_two_out); libtorch's device-generic
        # aoti_torch_scatter_reduce_out takes the same parameters and dispatches by device.
        if device == "openreg" and cpp_kernel_name.replace("__", "_").endswith(
                "scatter_reduce_two::call"):
            cpp_kernel_name = "aoti_torch_scatter_reduce"
        super()._generate_scatter_fallback(output, inputs, cpp_kernel_name, python_kernel_name,
                                           src_is_tensor, reduce, kwargs, device)

    def generate_fallback_kernel(self, node) -> None:
        # torch's C shims for other devices call that device's kernels directly; on
        # openreg an ATen operator Inductor leaves alone is dispatched by name instead.
        device = node.get_device()
        op = node.op_overload
        if (device is not None and device.type == "openreg"
                and isinstance(op, torch._ops.OpOverload)
                and op._schema.name.removeprefix("aten::") not in _C_SHIM):
            self.generate_fallback_kernel_with_runtime_lookup(
                node.get_name(),
                node.python_kernel_name,
                lambda: [*node.codegen_args(), *node.codegen_kwargs()],
                op,
                node.export_extern_kernel_node(),
                node.outputs if node.outputs else node.mutation_outputs,
            )
            return
        super().generate_fallback_kernel(node)

    # DOC START: aoti-weights
    # torch's AOTI runtime loads a model's weights into host memory unless it was built
    # for CUDA, XPU or MPS (aoti_runtime/model_base.h, load_constants), and refuses weights
    # of any other device type than the model's, which it parses from a name it knows
    # (parse_device_str: cpu, cuda, xpu, mps). So an openreg model declares its weights
    # as host tensors (the runtime loads them), and its first run copies them to its
    # openreg device, in place in the model's constants: later runs find them there.
    def codegen_model_constructor(self) -> None:
        self._weights_on_host = True
        try:
            super().codegen_model_constructor()
        finally:
            self._weights_on_host = False

    def _write_constants_unpacking(self) -> None:
        names = [name for name in V.graph.constants
                 if V.graph.get_original_value_of_constant(name).device.type == "openreg"]
        if V.graph.aot_mode and names:
            quoted = ", ".join(f'"{name}"' for name in names)
            self.prefix.splice(f"""
                {{
                    static std::mutex openreg_weights_mutex;
                    const std::lock_guard<std::mutex> lock(openreg_weights_mutex);
                    bool moved = false;
                    for (const char* name : {{{quoted}}}) {{
                        auto weight = constants_map_->find(name);
                        if (weight != constants_map_->end() &&
                            openreg_wrapper::on_host(weight->second.get())) {{
                            weight->second = openreg_wrapper::to_device(
                                weight->second.get(), this->device_idx_);
                            moved = true;
                        }}
                    }}
                    if (moved) {{
                        this->update_constants_array_from_map();
                    }}
                }}
                """)
        super()._write_constants_unpacking()
    # DOC END: aoti-weights

    def _generate_end_jit(self, result) -> None:
        # The JIT wrapper is a host program with the CPU's kernels in it: built with the
        # CPU's options (optimisation level, vector ISA, precompiled header).
        self.device = "cpu"
        try:
            super()._generate_end_jit(result)
        finally:
            self.device = "openreg"
