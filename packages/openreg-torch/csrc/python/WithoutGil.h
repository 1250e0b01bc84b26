#pragma once
// Work done without the GIL by the bindings, safe while the interpreter exits.
//
// py::gil_scoped_release takes the GIL back in its destructor. A thread that comes back
// for the GIL after Python began finalizing (a daemon thread: the DataLoader's pin-memory
// thread opening an IPC handle while its worker is terminated at exit) is ended there by
// Python with pthread_exit; that unwinding cannot leave a destructor (noexcept), and the
// process aborts: "terminate called without an active exception".
//
// without_gil takes the GIL back in an ordinary function instead. While Python finalizes,
// a thread other than the main one is parked rather than handed to Python to end: the
// process is about to exit, and nothing of it runs again (Python 3.14 does the same with
// its own daemon threads). Should finalization start while the thread already waits for
// the GIL, Python's pthread_exit unwinds through this ordinary frame and pybind11's
// dispatcher (which rethrows abi::__forced_unwind), not through a noexcept one.

#include <Python.h>
#include <pythread.h>
#include <unistd.h>

#ifdef __GLIBCXX__
#include <cxxabi.h>
#endif

#include <atomic>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

namespace openreg_torch {

namespace without_gil_detail {

// The main thread's identifier (PyThread_get_thread_ident), recorded at module import.
inline std::atomic<unsigned long> main_thread{0};

inline bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

inline void take_gil_back(PyThreadState* state) {
  const unsigned long main = main_thread.load(std::memory_order_relaxed);
  if (main != 0 && PyThread_get_thread_ident() != main && interpreter_finalizing()) {
    for (;;) {
      pause();  // until the process exits
    }
  }
  PyEval_RestoreThread(state);
}

} // namespace without_gil_detail

// Call once, with the GIL, from the main thread's import of the extension.
inline void record_main_thread(unsigned long ident) {
  without_gil_detail::main_thread.store(ident, std::memory_order_relaxed);
}

// fn() with the GIL released (the caller holds it); its result, or its exception
// rethrown with the GIL held again.
template <class F>
decltype(auto) without_gil(F&& fn) {
  using Result = std::invoke_result_t<F&>;
  PyThreadState* state = PyEval_SaveThread();
  std::exception_ptr error;
  if constexpr (std::is_void_v<Result>) {
    try {
      fn();
#ifdef __GLIBCXX__
    } catch (abi::__forced_unwind&) {
      throw;  // a cancelled thread: never swallowed
#endif
    } catch (...) {
      error = std::current_exception();
    }
    without_gil_detail::take_gil_back(state);
    if (error) std::rethrow_exception(error);
  } else {
    std::optional<Result> result;
    try {
      result.emplace(fn());
#ifdef __GLIBCXX__
    } catch (abi::__forced_unwind&) {
      throw;
#endif
    } catch (...) {
      error = std::current_exception();
    }
    without_gil_detail::take_gil_back(state);
    if (error) std::rethrow_exception(error);
    return Result(std::move(*result));
  }
}

} // namespace openreg_torch
