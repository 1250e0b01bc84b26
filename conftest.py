"""Loaded first by every pytest run from the checkout's root: the hypothesis profiles
(see packages/openreg-runtime/tests/hypothesis_profiles.py, on the pythonpath)."""

import hypothesis_profiles  # noqa: F401


def pytest_collection_finish(session):
    # Collecting test modules that import torch.testing._internal loads PyTorch's own
    # hypothesis profile ("dev"); the run uses ours.
    hypothesis_profiles.load()
