#pragma once

// openreg's backend metadata: what a vendor keeps per tensor beside sizes and strides
// (e.g. an internal memory format), stored as a c10::BackendMeta on the TensorImpl, the
// slot PyTorch reserves for PrivateUse1 backends. openreg's example is a layout tag a
// user sets and reads (torch.openreg.set_layout_tag / get_layout_tag). PyTorch carries
// the BackendMeta itself through shallow copies (detach, views made by
// shallow_copy_and_detach, tensors wrapped by subclasses); openreg carries it through
// copies between openreg tensors (clone, .to("openreg:1")) and through torch.save /
// torch.load (the serialization hooks below).

#include <ATen/core/Tensor.h>
#include <c10/core/TensorImpl.h>

#include <optional>
#include <string>
#include <unordered_map>

#include "runtime/OpenRegMacros.h"

namespace at::native::openreg {

// DOC START: tensor-meta
struct OpenRegTensorMeta final : c10::BackendMeta {
  explicit OpenRegTensorMeta(std::string tag) : layout_tag(std::move(tag)) {}

  // PyTorch calls this whenever it copies tensor metadata to another TensorImpl.
  c10::intrusive_ptr<c10::BackendMeta> clone(
      const c10::intrusive_ptr<c10::BackendMeta>& /*self*/) const override {
    return c10::make_intrusive<OpenRegTensorMeta>(layout_tag);
  }

  std::string layout_tag;
};
// DOC END: tensor-meta

// Sets (or, with nullopt, clears) the layout tag of an openreg tensor. A tag is 1 to 64
// letters, digits, '_' or '-'.
OPENREG_TORCH_API void set_layout_tag(const at::Tensor& tensor,
                                      const std::optional<std::string>& tag);
OPENREG_TORCH_API std::optional<std::string> layout_tag(const at::Tensor& tensor);

// A copy between openreg tensors: `dst` takes `src`'s tag unless it has one of its own.
void copy_layout_tag(const at::Tensor& src, const at::Tensor& dst);

// torch.save / torch.load: the tag travels in the tensor's metadata dictionary (string
// keys, bool values) as the key "openreg.layout_tag:<tag>".
void save_backend_meta(const at::Tensor& tensor, std::unordered_map<std::string, bool>& metadata);
void load_backend_meta(const at::Tensor& tensor, std::unordered_map<std::string, bool>& metadata);

} // namespace at::native::openreg
