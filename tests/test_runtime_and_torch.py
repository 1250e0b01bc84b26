"""openreg-torch sits on openreg-runtime: both layers see the same device memory."""

import struct

import openreg_runtime
import torch


def test_tensor_memory_is_runtime_device_memory():
    tensor = torch.arange(64, dtype=torch.float32, device="openreg:1")
    attributes = openreg_runtime.pointer_attributes(tensor.data_ptr())
    assert attributes.type == openreg_runtime.MemoryType.DEVICE
    assert attributes.device == 1
    assert attributes.size >= tensor.nbytes
    # Reading the bytes through the runtime gives the tensor's values.
    raw = openreg_runtime.copy_from_device(tensor.data_ptr() + 4 * 10, 4)
    assert struct.unpack("f", raw)[0] == 10.0


def test_runtime_write_is_seen_by_torch():
    tensor = torch.zeros(4, dtype=torch.int32, device="openreg")
    torch.openreg.synchronize()
    openreg_runtime.copy_to_device(tensor.data_ptr() + 8, struct.pack("i", 77))
    assert tensor.tolist() == [0, 0, 77, 0]


def test_memory_info_agrees():
    torch.openreg.set_device(0)
    free_torch, total_torch = torch.openreg.mem_get_info(0)
    openreg_runtime.set_device(0)
    free_runtime, total_runtime = openreg_runtime.mem_get_info()
    assert total_torch == total_runtime
    assert free_torch == free_runtime


def test_pinned_tensor_is_runtime_host_memory():
    pinned = torch.ones(16).pin_memory()
    attributes = openreg_runtime.pointer_attributes(pinned.data_ptr())
    assert attributes.type == openreg_runtime.MemoryType.HOST


def test_runtime_tests_run_children_under_the_same_policy(monkeypatch):
    # The runtime's tests cannot import openreg_torch.testing (no torch in py311-sanitize)
    # and keep a copy of its subprocess policy: the copies must not drift apart.
    import runtime_helpers

    from openreg_torch import testing

    assert runtime_helpers.ENV_PASSED_ON == testing.ENV_PASSED_ON
    assert runtime_helpers.ENV_PASSED_ON_PREFIXES == testing.ENV_PASSED_ON_PREFIXES
    assert runtime_helpers.ENV_SET == testing.ENV_SET
    monkeypatch.setenv("OPENREG_SOME_SETTING", "1")
    monkeypatch.setenv("SOME_SHELL_SETTING", "1")
    calls = [{}, {"PATH": None, "EXTRA": "1", "OPENREG_SOME_SETTING": "2"}]
    for env in calls:
        assert runtime_helpers.child_env(env) == testing.child_env(env)
