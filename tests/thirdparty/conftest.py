"""Third-party PyTorch code run unmodified on openreg and compared with the CPU.

Hugging Face libraries must never reach the network: every model here is built from a
config object with random weights. Set before any test module imports transformers.
"""

import os
import sys
from pathlib import Path

# Autouse: tests that switch devices (checkpoint loading onto openreg:1) get the current
# device and streams put back.
from openreg_torch.testing.fixtures import restore_device_and_streams  # noqa: F401

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

# The shared comparison helpers are imported by name (importlib import mode).
HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
