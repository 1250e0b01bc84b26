"""The execution layer: every piece of device work passes its one launch point.

The launch point (openreg-torch's csrc/execution/DeviceLaunch.h) lets an observer see
each kernel, copy and fill. These tests install a recording observer and check that each
way into the device — direct kernels, the boxed fallback, copies, .item(), convolution,
STUB kernels of openreg-ops-extra — shows up there, and that nothing in the C++ sources
calls the runtime's launch primitives outside the layer.
"""

import os
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import openreg_torch
from openreg_torch.testing import recorded_device_work

ROOT = Path(__file__).resolve().parent.parent
LAUNCH_PRIMITIVES = re.compile(r"\b(orLaunchKernel|orMemcpyAsync|orMemsetAsync|launch_kernel)\s*\(")
EXPECT_EXTRA = os.environ.get("OPENREG_EXPECT_EXTRA") == "1"


def recorded(fn):
    """The device work `fn` issues, as (kind, name, device, bytes) tuples."""
    return recorded_device_work(fn)[1]


def kernels(work):
    return [name for kind, name, _, _ in work if kind == "kernel"]


def test_launch_primitives_are_called_only_inside_the_execution_layer():
    offenders = []
    for package in ("openreg-torch", "openreg-ops-extra"):
        for path in (ROOT / "packages" / package / "csrc").rglob("*"):
            if path.suffix not in (".cpp", ".h") or "execution" in path.parts:
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if LAUNCH_PRIMITIVES.search(line):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []


def test_direct_kernel_and_fallback_launch_through_the_layer():
    a = torch.randn(8, device="openreg")
    b = torch.randn(8, device="openreg")
    assert openreg_torch.fallback.route_of("aten::mul.Tensor") == "direct kernel"
    assert kernels(recorded(lambda: a * b)) == ["aten::mul"]
    assert openreg_torch.fallback.route_of("aten::nonzero") == "zero-copy fallback"
    assert "aten::nonzero" in kernels(recorded(lambda: torch.nonzero(a > 0)))


def test_copies_and_item_launch_through_the_layer():
    host = torch.arange(1024, dtype=torch.float32)
    work = recorded(lambda: host.to("openreg:1"))
    assert ("copy", "Memcpy HtoD", 1, 4096) in work
    device = host.to("openreg")
    assert ("copy", "Memcpy DtoH", 0, 4096) in recorded(lambda: device.cpu())
    # A converting copy is a kernel on the kernel views.
    assert kernels(recorded(lambda: device.to(torch.float64))) == ["aten::_copy_from"]
    assert kernels(recorded(lambda: device[3].item())) == ["aten::_local_scalar_dense"]


def test_convolution_launches_through_the_layer():
    x = torch.randn(1, 2, 5, 5, device="openreg")
    w = torch.randn(3, 2, 3, 3, device="openreg")
    assert "aten::convolution_overrideable" in kernels(recorded(lambda: F.conv2d(x, w)))


@pytest.mark.skipif(not EXPECT_EXTRA, reason="openreg-ops-extra is not installed here")
def test_stub_kernel_launches_through_the_layer():
    x = torch.randn(16, device="openreg")
    assert kernels(recorded(lambda: torch.abs(x))) == ["aten::abs"]


def test_no_observer_no_record_and_results_unchanged():
    a = torch.randn(4, device="openreg")
    first = recorded(lambda: a + 1)
    assert kernels(first) == ["aten::add"]
    # Stopped: later work is not recorded, and a second start begins empty.
    (a + 1).cpu()
    assert kernels(recorded(lambda: None)) == []
    torch.testing.assert_close((a * 2).cpu(), a.cpu() * 2)
