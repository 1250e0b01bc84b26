// Events.
#include "Check.h"

namespace openreg::python {
namespace {

orEvent_t event(uintptr_t h) { return reinterpret_cast<orEvent_t>(h); }

}  // namespace

void bindEvents(py::module_& m) {
  m.def(
      "_event_create_with_flags",
      [](unsigned flags) {
        orEvent_t e = nullptr;
        check(orEventCreateWithFlags(&e, flags));
        return reinterpret_cast<uintptr_t>(e);
      },
      py::arg("flags") = 0);
  m.def("_event_create", [] {
    orEvent_t e = nullptr;
    check(orEventCreate(&e));
    return reinterpret_cast<uintptr_t>(e);
  });
  // Releasing an event opened from another process tells that process.
  m.def("_event_destroy",
        [](uintptr_t e) { callReleased([&] { return orEventDestroy(event(e)); }); });
  m.def("_event_record", [](uintptr_t e, uintptr_t s) {
    check(orEventRecord(event(e), reinterpret_cast<orStream_t>(s)));
  });
  m.def("_event_query", [](uintptr_t e) {
    orError_t err = orEventQuery(event(e));
    if (err == orErrorNotReady) {
      orGetLastError();
      return false;
    }
    check(err);
    return true;
  });
  m.def("_event_synchronize",
        [](uintptr_t e) { callReleased([&] { return orEventSynchronize(event(e)); }); });
  m.def("_event_elapsed_time", [](uintptr_t start, uintptr_t end) {
    float ms = 0;
    check(orEventElapsedTime(&ms, event(start), event(end)));
    return ms;
  });
}

}  // namespace openreg::python
