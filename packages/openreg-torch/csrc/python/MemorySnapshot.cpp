#include "python/MemorySnapshot.h"

#include <torch/csrc/profiler/combined_traceback.h>
#include <torch/csrc/utils/pybind.h>

#include <mutex>
#include <unordered_map>

#include "runtime/OpenRegDeviceAllocator.h"
#include "python/WithoutGil.h"

namespace py = pybind11;

// From torch/csrc/profiler/python/combined_traceback.h, which the wheel ships without
// the nlohmann/json.hpp it includes; libtorch_python exports both.
namespace torch {
std::vector<pybind11::object> py_symbolize(std::vector<CapturedTraceback*>& to_symbolize);
void installCapturedTracebackPython();
} // namespace torch

namespace openreg_torch {
namespace {

using c10::CachingDeviceAllocator::RecordContext;
using Action = c10::CachingDeviceAllocator::TraceEntry::Action;

// DOC START: gather-stacks
// Python (and TorchScript) frames only, or C++ frames too (stacks="all"). Capturing
// Python frames takes the GIL; the allocating thread does not hold it (PyTorch's Python
// bindings release it around the operator), and nothing waits for device work while
// holding it (the copies and synchronisations that wait release it too), so taking it
// here, outside the cache's lock, cannot deadlock.
std::shared_ptr<c10::GatheredContext> gatherPython() {
  return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/true, /*cpp=*/false);
}

std::shared_ptr<c10::GatheredContext> gatherPythonAndCpp() {
  return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/true, /*cpp=*/true);
}
// DOC END: gather-stacks

void recordHistory(bool record_state, bool record_trace, int context, bool cpp_frames,
                   size_t max_entries, bool clear_history) {
  TORCH_CHECK(context >= 0 && context <= static_cast<int>(RecordContext::ALL),
              "openreg: unknown record context ", context);
  static std::once_flag python_unwinder;
  std::call_once(python_unwinder, [] { torch::installCapturedTracebackPython(); });
  c10::openreg::recordHistory(record_state, record_trace,
                              cpp_frames ? &gatherPythonAndCpp : &gatherPython,
                              static_cast<RecordContext>(context), max_entries, clear_history);
}

const char* actionName(Action action) {
  switch (action) {
    case Action::ALLOC: return "alloc";
    case Action::FREE_REQUESTED: return "free_requested";
    case Action::FREE_COMPLETED: return "free_completed";
    case Action::SEGMENT_ALLOC: return "segment_alloc";
    case Action::SEGMENT_FREE: return "segment_free";
    case Action::SEGMENT_MAP: return "segment_map";
    case Action::SEGMENT_UNMAP: return "segment_unmap";
    case Action::SNAPSHOT: return "snapshot";
    case Action::OOM: return "oom";
    default: return "unknown";  // actions of later releases (2.14's "annotate")
  }
}

// Symbolizes every recorded stack in one batch (frames shared between stacks are
// resolved once) and hands out each one's list of {"filename", "line", "name"} dicts.
class Frames {
 public:
  void add(const std::shared_ptr<c10::GatheredContext>& context) {
    if (context != nullptr && index_.count(context.get()) == 0) {
      index_.emplace(context.get(), tracebacks_.size());
      tracebacks_.push_back(torch::getCapturedTracebackFromContext(context));
    }
  }

  void symbolize() {
    symbolized_ = torch::py_symbolize(tracebacks_);
  }

  py::object of(const std::shared_ptr<c10::GatheredContext>& context) const {
    if (context == nullptr) {
      return py::list();
    }
    return symbolized_.at(index_.at(context.get()));
  }

 private:
  std::unordered_map<const c10::GatheredContext*, size_t> index_;
  std::vector<torch::CapturedTraceback*> tracebacks_;
  std::vector<py::object> symbolized_;
};

// The dictionary torch.cuda.memory._snapshot() returns, which torch.cuda._memory_viz
// and the memory visualiser read.
py::dict memorySnapshot() {
  // The caches' locks are taken without the GIL.
  c10::openreg::MemorySnapshot snapshot = without_gil([] { return c10::openreg::snapshot(); });
  Frames frames;
  for (const auto& segment : snapshot.segments) {
    frames.add(segment.context_when_allocated);
  }
  for (const auto& trace : snapshot.device_traces) {
    for (const auto& event : trace) {
      frames.add(event.context);
    }
  }
  frames.symbolize();

  py::list segments;
  for (const auto& segment : snapshot.segments) {
    py::dict entry;
    entry["device"] = segment.device;
    entry["address"] = segment.address;
    entry["total_size"] = segment.total_size;
    entry["allocated_size"] = segment.allocated_size;
    entry["active_size"] = segment.active_size;
    entry["requested_size"] = segment.requested_size;
    entry["stream"] = reinterpret_cast<uintptr_t>(segment.stream);
    entry["segment_type"] = segment.is_large ? "large" : "small";
    entry["segment_pool_id"] = py::make_tuple(0, 0);
    entry["is_expandable"] = false;
    entry["frames"] = frames.of(segment.context_when_allocated);
    py::list blocks;
    size_t address = segment.address;
    for (const auto& block : segment.blocks) {
      py::dict info;
      info["address"] = address;
      info["size"] = block.size;
      info["requested_size"] = block.requested_size;
      info["state"] = block.allocated ? "active_allocated"
                      : block.active  ? "active_pending_free"
                                      : "inactive";
      info["frames"] = frames.of(block.context_when_allocated);
      blocks.append(info);
      address += block.size;
    }
    entry["blocks"] = blocks;
    segments.append(entry);
  }

  py::list device_traces;
  for (const auto& trace : snapshot.device_traces) {
    py::list events;
    for (const auto& event : trace) {
      py::dict entry;
      entry["action"] = actionName(event.action);
      if (event.action == Action::OOM) {
        entry["device_free"] = event.address;
      } else {
        entry["addr"] = event.address;
      }
      entry["size"] = event.size;
      entry["stream"] = reinterpret_cast<uintptr_t>(event.stream);
      entry["time_us"] = event.time_us;
      entry["frames"] = frames.of(event.context);
      events.append(entry);
    }
    device_traces.append(events);
  }

  py::dict result;
  result["segments"] = segments;
  result["device_traces"] = device_traces;
  return result;
}

} // namespace

void init_memory_snapshot_bindings(py::module_& m) {
  m.def("_record_memory_history", &recordHistory);
  m.def("_memory_snapshot", &memorySnapshot);
  m.def("_set_memory_fraction", &c10::openreg::setMemoryFraction);
  m.def("_get_memory_fraction", &c10::openreg::getMemoryFraction);
}

} // namespace openreg_torch
