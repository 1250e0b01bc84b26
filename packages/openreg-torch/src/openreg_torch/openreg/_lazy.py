"""Lazy initialisation and the bad-fork check, as torch.cuda does them.

The runtime starts on first real use. Calls made before that which must not start it
(seeding) are queued and replayed at initialisation. A child forked after the parent
initialised cannot use the device: its device memory was not inherited.
"""

import os
import threading
import traceback
from collections.abc import Callable

from .. import _C

_initialized = False
_in_bad_fork = False
_lock = threading.RLock()
_queued_calls: list[tuple[Callable[[], None], list[str]]] = []


def is_initialized() -> bool:
    """Whether the openreg runtime has been initialised in this process."""
    return _initialized and not _in_bad_fork


def _is_in_bad_fork() -> bool:
    return _in_bad_fork


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
        if _in_bad_fork:
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


def _after_fork_in_child() -> None:
    global _initialized, _in_bad_fork
    if _initialized:
        _initialized = False
        _in_bad_fork = True


os.register_at_fork(after_in_child=_after_fork_in_child)
# DOC END: lazy-init
