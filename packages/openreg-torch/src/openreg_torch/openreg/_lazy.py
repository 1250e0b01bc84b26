"""Lazy initialisation and the bad-fork check, as torch.cuda does them.

The runtime starts on first real use. Calls made before that which must not start it
(seeding) are queued and replayed at initialisation. A child forked after the parent
initialised cannot use the device: its device memory was not inherited.

The runtime owns the bad-fork state, as torch.cuda leaves it to its C++ layer: only
the runtime knows whether device memory was mapped (a C++ caller, e.g. a device count
or an allocation, may have started it without this module), and every runtime call in a
bad fork already fails. Python asks it rather than keeping a second flag at fork time.
"""

import threading
import traceback
from collections.abc import Callable

from .. import _C

_initialized = False
_lock = threading.RLock()
_queued_calls: list[tuple[Callable[[], None], list[str]]] = []


def is_initialized() -> bool:
    """Whether the openreg runtime has been initialised in this process."""
    return _initialized and not _is_in_bad_fork()


def _is_in_bad_fork() -> bool:
    return _C._is_in_bad_fork()


def _lazy_call(callable: Callable[[], None]) -> None:
    """Run `callable` now if initialised, else at initialisation."""
    with _lock:
        if is_initialized():
            callable()
        else:
            _queued_calls.append((callable, traceback.format_stack()))


# DOC START: lazy-init
def _lazy_init() -> None:
    global _initialized
    if is_initialized():
        return
    with _lock:
        if is_initialized():
            return
        if _is_in_bad_fork():
            raise RuntimeError(
                "Cannot re-initialize openreg in forked subprocess. To use openreg with "
                "multiprocessing, you must use the 'spawn' start method"
            )
        _C._init()
        _initialized = True
        calls, _queued_calls[:] = list(_queued_calls), []
        for queued, origin in calls:
            try:
                queued()
            except Exception as error:
                raise RuntimeError(
                    "openreg call failed lazily at initialization with error: "
                    f"{error}\n\nopenreg call was originally invoked at:\n\n{''.join(origin)}"
                ) from error

# DOC END: lazy-init
