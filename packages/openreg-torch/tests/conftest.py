"""Fixtures of openreg-torch's tests, from the shared test support (openreg_torch.testing):
`run_python` runs a script in a fresh interpreter under its environment policy, and every
test ends with the current device and streams it started with."""

from openreg_torch.testing.fixtures import restore_device_and_streams, run_python  # noqa: F401
