"""Settings for every test run from this checkout (pytest loads this file first).

Hypothesis profiles, chosen by HYPOTHESIS_PROFILE (or pytest's --hypothesis-profile):

* ``openreg`` (the default): derandomized, so a run tests the same examples every time
  and a failure reproduces by running the test again; bounded examples, no deadline (the
  sanitized build is several times slower than a normal one), no example database.
* ``long``: random, many more examples and longer state-machine runs; a failure prints
  the ``@reproduce_failure`` blob that replays it. The py311-fuzz tox env runs it.

Imports no torch: the runtime's tests run without one.
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
    max_examples=1000,
    stateful_step_count=80,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "openreg"))
