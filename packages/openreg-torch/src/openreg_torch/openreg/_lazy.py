"""Lazy initialisation and the bad-fork check, as torch.cuda does them.

The runtime starts on first real use. Calls made before that which must not start it
(seeding) are queued and replayed at initialisation. A child forked after the parent
initialised cannot use the device: its device memory was not inherited.

Every CPU-only program reaches this queue: torch.manual_seed and torch.seed seed openreg's
devices too. So a call that resets a generator's whole state (a seed, a state) replaces
the queued calls it makes moot, keeping the queue at most one entry per device plus one
for the current device and one for all of them however often a program seeds; and seeds,
checked when called, keep no stack trace (formatting one made torch.manual_seed a third
slower; docs/autoload.md).

The runtime owns the bad-fork state, as torch.cuda leaves it to its C++ layer: only
the runtime knows whether device memory was mapped (a C++ caller, e.g. a device count
or an allocation, may have started it without this module), and every runtime call in a
bad fork already fails. Python asks it rather than keeping a second flag at fork time.
"""

import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from .. import _C

# The generators a queued call resets: one device's index, every device's, or the one
# current when the call runs.
ALL_DEVICES = "all"
CURRENT_DEVICE = "current"


@dataclass
class _QueuedCall:
    run: Callable[[], None]
    # Where the call was made, for the error if it fails at initialisation (None: not kept).
    origin: list[str] | None
    # Whose generator state the call replaces entirely (None: it replaces nothing).
    resets: int | str | None


_initialized = False
_lock = threading.RLock()
_queued_calls: list[_QueuedCall] = []


def is_initialized() -> bool:
    """Whether the openreg runtime has been initialised in this process."""
    return _initialized and not _is_in_bad_fork()


def _is_in_bad_fork() -> bool:
    return _C._is_in_bad_fork()


def _lazy_call(callable: Callable[[], None], *, resets: int | str | None = None,
               keep_origin: bool = True) -> None:
    """Run `callable` now if initialised, else at initialisation. `resets`: the generators
    whose whole state `callable` replaces (a device index, ALL_DEVICES or CURRENT_DEVICE);
    earlier queued calls that reset only those are dropped. `keep_origin=False` skips the
    stack trace, for calls whose arguments were checked already."""
    with _lock:
        if is_initialized():
            callable()
            return
        if resets is not None:
            _queued_calls[:] = [queued for queued in _queued_calls
                                if queued.resets is None
                                or (resets != ALL_DEVICES and queued.resets != resets)]
        origin = traceback.format_stack() if keep_origin else None
        _queued_calls.append(_QueuedCall(callable, origin, resets))


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
        for queued in calls:
            try:
                queued.run()
            except Exception as error:
                origin = "".join(queued.origin or ["(not recorded for seeds)\n"])
                raise RuntimeError(
                    "openreg call failed lazily at initialization with error: "
                    f"{error}\n\nopenreg call was originally invoked at:\n\n{origin}"
                ) from error

# DOC END: lazy-init
