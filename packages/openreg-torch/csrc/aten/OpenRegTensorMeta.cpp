#include "aten/OpenRegTensorMeta.h"

#include <algorithm>
#include <cctype>

namespace at::native::openreg {
namespace {

constexpr std::string_view kTagKey = "openreg.layout_tag:";

OpenRegTensorMeta* meta_of(const at::Tensor& tensor) {
  return dynamic_cast<OpenRegTensorMeta*>(tensor.unsafeGetTensorImpl()->get_backend_meta());
}

void check_openreg(const at::Tensor& tensor, const char* what) {
  TORCH_CHECK(tensor.defined(), "openreg: ", what, " needs a defined tensor");
  TORCH_CHECK(tensor.device().type() == c10::kPrivateUse1 && tensor.layout() == c10::kStrided,
              "openreg: ", what, " takes a strided openreg tensor, got a ", tensor.layout(),
              " tensor on ", tensor.device());
}

} // namespace

// DOC START: layout-tag
void set_layout_tag(const at::Tensor& tensor, const std::optional<std::string>& tag) {
  check_openreg(tensor, "set_layout_tag");
  c10::TensorImpl* impl = tensor.unsafeGetTensorImpl();
  if (!tag.has_value()) {
    impl->set_backend_meta(nullptr);
    return;
  }
  const bool valid = !tag->empty() && tag->size() <= 64 &&
      std::all_of(tag->begin(), tag->end(), [](unsigned char c) {
        return std::isalnum(c) != 0 || c == '_' || c == '-';
      });
  TORCH_CHECK(valid, "openreg: a layout tag is 1 to 64 letters, digits, '_' or '-', got '",
              *tag, "'");
  impl->set_backend_meta(c10::make_intrusive<OpenRegTensorMeta>(*tag));
}
// DOC END: layout-tag

std::optional<std::string> layout_tag(const at::Tensor& tensor) {
  check_openreg(tensor, "get_layout_tag");
  const OpenRegTensorMeta* meta = meta_of(tensor);
  return meta == nullptr ? std::nullopt : std::optional<std::string>(meta->layout_tag);
}

void copy_layout_tag(const at::Tensor& src, const at::Tensor& dst) {
  const OpenRegTensorMeta* meta = meta_of(src);
  if (meta != nullptr && meta_of(dst) == nullptr) {
    dst.unsafeGetTensorImpl()->set_backend_meta(meta->clone(nullptr));
  }
}

// DOC START: backend-meta-serialization
void save_backend_meta(const at::Tensor& tensor, std::unordered_map<std::string, bool>& metadata) {
  if (const OpenRegTensorMeta* meta = meta_of(tensor)) {
    metadata[std::string(kTagKey) + meta->layout_tag] = true;
  }
}

void load_backend_meta(const at::Tensor& tensor, std::unordered_map<std::string, bool>& metadata) {
  for (auto entry = metadata.begin(); entry != metadata.end(); ++entry) {
    if (entry->first.rfind(kTagKey, 0) == 0) {
      set_layout_tag(tensor, entry->first.substr(kTagKey.size()));
      metadata.erase(entry);
      return;
    }
  }
}
// DOC END: backend-meta-serialization

} // namespace at::native::openreg
