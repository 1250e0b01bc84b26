"""The hypothesis profiles of every openreg test suite, loaded on import.

Imported by the root conftest.py (runs from the checkout's root) and by this directory's
conftest.py (runs of the runtime alone, e.g. py311-sanitize and py311-fuzz, which take
packages/openreg-runtime as pytest's root); it is on both pytest pythonpaths. No torch.

HYPOTHESIS_PROFILE (or pytest's --hypothesis-profile) chooses:

* ``openreg`` (the default): derandomized, so every run tests the same examples and a
  failure reproduces by running the test again; bounded examples; no deadline (the
  sanitized build is several times slower than a normal one); no example database.
* ``long``: random, many more examples and longer state-machine runs; a failure prints
  the ``@reproduce_failure`` blob that replays it. The py311-fuzz tox env runs it.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "openreg",
    derandomize=True,
    max_examples=50,
    stateful_step_count=40,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "long",
    parent=settings.get_profile("openreg"),
    derandomize=False,
    max_examples=400,
    stateful_step_count=80,
)


def load() -> None:
    """Make the chosen openreg profile the current one."""
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "openreg")


load()
