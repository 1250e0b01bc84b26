"""A thread that waits in openreg without the GIL while the program exits
(python/WithoutGil.h).

A daemon thread coming back for the GIL after Python began finalizing is ended by Python
with pthread_exit. Taken back in py::gil_scoped_release's destructor (noexcept), that
aborted the process: "terminate called without an active exception" (the DataLoader's
pin-memory thread of an iterator left alive at exit, opening an IPC handle of the worker
that exit terminates: test_multiprocessing.py::test_dataloader_pin_memory, now and then).
Here the moment is made certain: the thread waits for a held stream that opens only
while Python finalizes."""

from openreg_torch.testing import run_python

WAIT_FOR_A_STREAM_OPENED_WHILE_FINALIZING = """
import sys
import threading
import types
import torch
from openreg_torch.openreg import _C

stream = torch.openreg.Stream()
gate = _C._StreamGate(stream.stream_id, stream.device_index, stream.device_type)
torch.openreg.Event().record(stream)  # pending on the held stream until the gate opens

entered = threading.Event()

def wait_for_the_device():
    entered.set()
    torch.openreg.synchronize()  # without the GIL, until the gate opens

threading.Thread(target=wait_for_the_device, daemon=True).start()
entered.wait()

class OpenWhileFinalizing:
    def __del__(self, gate=gate):
        gate.open()  # the waiting thread comes back for the GIL: Python is finalizing

# Deleted while Python finalizes, with the modules: a module nothing else refers to
# (the globals of __main__ stay alive with the waiting thread's frame).
holder = types.ModuleType("_open_while_finalizing")
holder.keeper = OpenWhileFinalizing()
sys.modules[holder.__name__] = holder
del holder
print("ok", flush=True)
"""


def test_a_thread_waiting_in_openreg_while_python_finalizes_does_not_abort():
    result = run_python(WAIT_FOR_A_STREAM_OPENED_WHILE_FINALIZING)
    assert result.returncode == 0 and result.stdout == "ok\n", (result.returncode, result.stderr[-500:])
    assert "terminate called" not in result.stderr
