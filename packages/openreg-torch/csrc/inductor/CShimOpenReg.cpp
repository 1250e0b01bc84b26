// openreg's C shim for Inductor's C++ wrapper: the twin of torch's generated
// c_shim_cuda.cpp. The C++ wrapper calls an extern kernel Inductor picked for an openreg
// buffer (a matrix multiply written into a buffer it allocated) as
// `aoti_torch_openreg_<op>(handles...)`; torch ships such functions for its own devices
// only. These run the operator through the dispatcher, so openreg's kernel serves it as
// in eager mode. The generated code finds them with dlsym (wrapper_cpp.py): only the ops
// Inductor calls this way on openreg are here, and the attention operators, whose integer
// results Inductor's dispatch by name cannot return (torch 2.13/2.14 generate
// `RAIIAtenTensorHandle 8;` for them); every other operator of a graph is dispatched at
// run time by name. Parameters follow torch's generated c_shim_cpu.h for each operator.

#include <ATen/ops/_int_mm.h>
#include <ATen/ops/_scaled_dot_product_fused_attention_overrideable.h>
#include <ATen/ops/_scaled_dot_product_fused_attention_overrideable_backward.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/baddbmm.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/mm.h>
#include <torch/csrc/inductor/aoti_torch/utils.h>

#include <array>

#include "runtime/OpenRegMacros.h"

using torch::aot_inductor::new_tensor_handle;
using torch::aot_inductor::pointer_to_optional;
using torch::aot_inductor::tensor_handle_to_tensor_pointer;

namespace {
at::Tensor& tensor(AtenTensorHandle handle) {
  return *tensor_handle_to_tensor_pointer(handle);
}
// A result the wrapper asked for: it passes nullptr for results nothing reads.
template <typename Value, typename Result>
void set_result(Result* slot, Value&& value) {
  if (slot != nullptr) {
    *slot = std::forward<Value>(value);
  }
}
void set_result(AtenTensorHandle* slot, at::Tensor&& value) {
  if (slot != nullptr) {
    *slot = new_tensor_handle(std::move(value));
  }
}
// An optional tensor argument: nullptr for none.
std::optional<at::Tensor> optional_tensor(const AtenTensorHandle* handle) {
  return handle == nullptr ? std::nullopt : std::optional<at::Tensor>(tensor(*handle));
}
} // namespace

extern "C" {

OPENREG_TORCH_API AOTITorchError aoti_torch_openreg_mm_out(AtenTensorHandle out,
                                                           AtenTensorHandle self,
                                                           AtenTensorHandle mat2) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    at::mm_out(tensor(out), tensor(self), tensor(mat2));
  });
}

OPENREG_TORCH_API AOTITorchError aoti_torch_openreg_addmm_out(AtenTensorHandle out,
                                                              AtenTensorHandle self,
                                                              AtenTensorHandle mat1,
                                                              AtenTensorHandle mat2, double beta,
                                                              double alpha) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    at::addmm_out(tensor(out), tensor(self), tensor(mat1), tensor(mat2), beta, alpha);
  });
}

OPENREG_TORCH_API AOTITorchError aoti_torch_openreg_bmm_out(AtenTensorHandle out,
                                                            AtenTensorHandle self,
                                                            AtenTensorHandle mat2) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    at::bmm_out(tensor(out), tensor(self), tensor(mat2));
  });
}

OPENREG_TORCH_API AOTITorchError aoti_torch_openreg_baddbmm_out(AtenTensorHandle out,
                                                                AtenTensorHandle self,
                                                                AtenTensorHandle batch1,
                                                                AtenTensorHandle batch2,
                                                                double beta, double alpha) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    at::baddbmm_out(tensor(out), tensor(self), tensor(batch1), tensor(batch2), beta, alpha);
  });
}

OPENREG_TORCH_API AOTITorchError aoti_torch_openreg__int_mm_out(AtenTensorHandle out,
                                                                AtenTensorHandle self,
                                                                AtenTensorHandle mat2) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    at::_int_mm_out(tensor(out), tensor(self), tensor(mat2));
  });
}

OPENREG_TORCH_API AOTITorchError aoti_torch_openreg__scaled_dot_product_fused_attention_overrideable(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value,
    AtenTensorHandle* attn_bias, double dropout_p, int32_t is_causal, int32_t return_debug_mask,
    double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5, AtenTensorHandle* ret6,
    AtenTensorHandle* ret7, AtenTensorHandle* ret8) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    auto [output, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, philox_seed, philox_offset,
          debug_attn_mask] =
        at::_scaled_dot_product_fused_attention_overrideable(
            tensor(query), tensor(key), tensor(value), optional_tensor(attn_bias),
            dropout_p, is_causal != 0, return_debug_mask != 0, pointer_to_optional(scale));
    set_result(ret0, std::move(output));
    set_result(ret1, std::move(logsumexp));
    set_result(ret2, std::move(cum_seq_q));
    set_result(ret3, std::move(cum_seq_k));
    set_result(ret4, max_q.expect_int());
    set_result(ret5, max_k.expect_int());
    set_result(ret6, std::move(philox_seed));
    set_result(ret7, std::move(philox_offset));
    set_result(ret8, std::move(debug_attn_mask));
  });
}

OPENREG_TORCH_API AOTITorchError
aoti_torch_openreg__scaled_dot_product_fused_attention_overrideable_backward(
    AtenTensorHandle grad_out, AtenTensorHandle query, AtenTensorHandle key,
    AtenTensorHandle value, AtenTensorHandle attn_bias, const int32_t* grad_input_mask,
    int64_t grad_input_mask_len_, AtenTensorHandle out, AtenTensorHandle logsumexp,
    AtenTensorHandle cum_seq_q, AtenTensorHandle cum_seq_k, int64_t max_q, int64_t max_k,
    double dropout_p, int32_t is_causal, AtenTensorHandle philox_seed,
    AtenTensorHandle philox_offset, double* scale, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    TORCH_CHECK(grad_input_mask_len_ == 4, "openreg: attention backward takes 4 gradient "
                "flags, got ", grad_input_mask_len_);
    const std::array<bool, 4> mask{grad_input_mask[0] != 0, grad_input_mask[1] != 0,
                                   grad_input_mask[2] != 0, grad_input_mask[3] != 0};
    auto [grad_query, grad_key, grad_value, grad_attn_bias] =
        at::_scaled_dot_product_fused_attention_overrideable_backward(
            tensor(grad_out), tensor(query), tensor(key), tensor(value), tensor(attn_bias),
            mask, tensor(out), tensor(logsumexp), tensor(cum_seq_q), tensor(cum_seq_k), max_q,
            max_k, dropout_p, is_causal != 0, tensor(philox_seed), tensor(philox_offset),
            pointer_to_optional(scale));
    set_result(ret0, std::move(grad_query));
    set_result(ret1, std::move(grad_key));
    set_result(ret2, std::move(grad_value));
    set_result(ret3, std::move(grad_attn_bias));
  });
}

OPENREG_TORCH_API AOTITorchError aoti_torch_openreg_convolution(
    AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias,
    const int64_t* stride, int64_t stride_len_, const int64_t* padding, int64_t padding_len_,
    const int64_t* dilation, int64_t dilation_len_, int32_t transposed,
    const int64_t* output_padding, int64_t output_padding_len_, int64_t groups,
    AtenTensorHandle* ret0) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    set_result(ret0, at::convolution(tensor(input), tensor(weight), optional_tensor(bias),
                                     c10::IntArrayRef(stride, stride_len_),
                                     c10::IntArrayRef(padding, padding_len_),
                                     c10::IntArrayRef(dilation, dilation_len_), transposed != 0,
                                     c10::IntArrayRef(output_padding, output_padding_len_),
                                     groups));
  });
}

} // extern "C"
