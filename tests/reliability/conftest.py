"""Fixtures of the reliability tests, from the shared test support (openreg_torch.testing):
`run_python` (a fresh interpreter, for state before initialisation or crashes), and every
test starts and ends with the same current device and streams."""

from openreg_torch.testing.fixtures import restore_device_and_streams, run_python  # noqa: F401
