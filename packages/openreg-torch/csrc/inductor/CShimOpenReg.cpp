// openreg's C shim for Inductor's C++ wrapper: the twin of torch's generated
// c_shim_cuda.cpp. The C++ wrapper calls an extern kernel Inductor picked for an openreg
// buffer (a matrix multiply written into a buffer it allocated) as
// `aoti_torch_openreg_<op>(handles...)`; torch ships such functions for its own devices
// only. These run the operator through the dispatcher, so openreg's kernel serves it as
// in eager mode. The generated code finds them with dlsym (wrapper_cpp.py): only the ops
// Inductor calls this way on openreg are here; every other operator of a graph is
// dispatched at run time by name.

#include <ATen/ops/_int_mm.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/baddbmm.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/mm.h>
#include <torch/csrc/inductor/aoti_torch/utils.h>

#include "runtime/OpenRegMacros.h"

using torch::aot_inductor::tensor_handle_to_tensor_pointer;

namespace {
at::Tensor& tensor(AtenTensorHandle handle) {
  return *tensor_handle_to_tensor_pointer(handle);
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

} // extern "C"
