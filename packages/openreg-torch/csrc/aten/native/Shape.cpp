#include "aten/native/Shape.h"

#include <ATen/Parallel.h>
#include <c10/util/SmallVector.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "execution/DeviceLoops.h"
#include "execution/KernelView.h"

namespace at::native::openreg {

// DOC START: cat-by-copies
bool cat_by_copies(c10::Device device, std::string_view name, const at::ITensorListRef& tensors,
                   const at::Tensor& out, int64_t dim, bool all_contiguous, bool all_same_dtype,
                   c10::MemoryFormat memory_format) {
  if (!all_contiguous || !all_same_dtype || memory_format != c10::MemoryFormat::Contiguous ||
      !out.is_contiguous()) {
    return false;
  }
  for (int64_t outer = 0; outer < dim; ++outer) {
    if (out.size(outer) != 1) {
      return false;  // the inputs' rows interleave in the result
    }
  }
  struct Piece {
    const void* source;
    size_t bytes;
    size_t offset;  // in the result
  };
  c10::SmallVector<Piece, 16> pieces;
  size_t total = 0;
  int64_t largest = 0;
  for (const at::Tensor& tensor : tensors) {
    if (tensor.numel() == 0) {
      continue;  // legacy empty and zero-size inputs add nothing
    }
    if (tensor.scalar_type() != out.scalar_type()) {
      return false;
    }
    pieces.push_back({tensor.const_data_ptr(), tensor.nbytes(), total});
    total += tensor.nbytes();
    largest = std::max(largest, tensor.numel());
  }
  // Small results the CPU copies serially too (its cat_serial_kernel's condition); larger
  // ones of many small pieces in parallel over the pieces. A large piece is copied faster
  // by the CPU's kernel on aliases, which splits it over the threads.
  const bool serial = out.numel() < at::internal::GRAIN_SIZE || at::get_num_threads() == 1;
  if (!serial && largest >= at::internal::GRAIN_SIZE) {
    return false;
  }
  launch_on_device(device, name, [&] {
    auto* destination = static_cast<char*>(kernel_pointer(out.const_data_ptr()));
    auto copy = [&](int64_t begin, int64_t end) {
      for (int64_t index = begin; index < end; ++index) {
        const Piece& piece = pieces[index];
        std::memcpy(destination + piece.offset, kernel_pointer(piece.source), piece.bytes);
      }
    };
    if (serial) {
      copy(0, static_cast<int64_t>(pieces.size()));
    } else {
      const int64_t per_piece = out.numel() / static_cast<int64_t>(pieces.size()) + 1;
      at::parallel_for(0, static_cast<int64_t>(pieces.size()),
                       std::max<int64_t>(1, at::internal::GRAIN_SIZE / per_piece), copy);
    }
  });
  return true;
}
// DOC END: cat-by-copies

} // namespace at::native::openreg
