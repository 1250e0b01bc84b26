"""Test support for openreg, used by the tests of every openreg package (as
``torch.testing`` is by PyTorch's):

* ``run_python`` / ``run_process``: a fresh interpreter or any command, with an explicit
  environment policy and a timeout that kills the child's whole process group;
* ``preserved_device_and_streams``: puts back the current device and streams;
* ``assert_matches_cpu``: runs a function on the CPU and on openreg, compares the results;
* ``recorded_device_work``: the kernels, copies and fills a function issues;
* ``openreg_torch.testing.fixtures``: the same as pytest fixtures (imports pytest).
"""

from ._comparison import assert_matches_cpu
from ._device_work import recorded_device_work
from ._process import (
    ENV_PASSED_ON,
    ENV_PASSED_ON_PREFIXES,
    ENV_SET,
    ChildTimeout,
    child_env,
    run_process,
    run_python,
)
from ._state import preserved_device_and_streams

__all__ = [
    "ENV_PASSED_ON",
    "ENV_PASSED_ON_PREFIXES",
    "ENV_SET",
    "ChildTimeout",
    "assert_matches_cpu",
    "child_env",
    "preserved_device_and_streams",
    "recorded_device_work",
    "run_process",
    "run_python",
]
