// Autocast for openreg: the same per-operator policy PyTorch applies to CUDA (lower
// precision ops, fp32 ops, promotion, banned ops), registered for AutocastPrivateUse1
// through PyTorch's own operator lists, so the policy follows the installed torch.

#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace at::openreg {

using at::autocast::CastPolicy;

namespace {

Tensor binary_cross_entropy_banned(const Tensor&, const Tensor&, const std::optional<Tensor>&,
                                   int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to "
              "autocast on openreg (as on CUDA): their inputs may be float16 and the log "
              "underflows. Use torch.nn.functional.binary_cross_entropy_with_logits or "
              "torch.nn.BCEWithLogitsLoss, which are safe, or disable autocast for this op.");
}

} // namespace

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

// DOC START: autocast
TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define OPENREG_LOWER_PRECISION(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
  AT_FORALL_LOWER_PRECISION_FP(OPENREG_LOWER_PRECISION)
#define OPENREG_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
  AT_FORALL_FP32(OPENREG_FP32)
#define OPENREG_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
  AT_FORALL_FP32_SET_OPT_DTYPE(OPENREG_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
#define OPENREG_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_PROMOTE(OPENREG_PROMOTE)
  // Unsafe under autocast, exactly as on CUDA: users must use the *_with_logits form.
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"),
         TORCH_FN(binary_cross_entropy_banned));
}
// DOC END: autocast

} // namespace at::openreg
