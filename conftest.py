"""Loaded first by every pytest run from the checkout's root: the hypothesis profiles
(see packages/openreg-runtime/tests/hypothesis_profiles.py, on the pythonpath)."""

import hypothesis_profiles  # noqa: F401
