"""Third-party PyTorch code run unmodified on openreg and compared with the CPU.

Hugging Face libraries must never reach the network: every model here is built from a
config object with random weights. Set before any test module imports transformers.
"""

import os
import sys
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

# The shared comparison helpers are imported by name (importlib import mode).
HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


@pytest.fixture(autouse=True)
def restore_current_device():
    """Tests that switch devices (checkpoint loading onto openreg:1) leave device 0 current."""
    yield
    torch.openreg.set_device(0)
