"""A program may exit right after backward() on openreg (openreg/_autograd_exit.py).

Without openreg's exit hook about one run in two aborted with "terminate called without
an active exception": an autograd device thread released the last GraphTask while the
interpreter was finalizing. Several runs at once make that moment likelier."""

from concurrent.futures import ThreadPoolExecutor

from openreg_torch.testing import run_python

EXIT_AFTER_BACKWARD = """
import torch
model = torch.nn.Linear(64, 64).to("openreg")
model(torch.randn(32, 64, device="openreg")).sum().backward()
"""

RUNS = 6


def test_exit_right_after_backward_does_not_abort():
    with ThreadPoolExecutor(RUNS) as pool:
        results = list(pool.map(lambda _: run_python(EXIT_AFTER_BACKWARD, timeout=120),
                                 range(RUNS)))
    failed = [(r.returncode, r.stderr[-300:]) for r in results if r.returncode != 0]
    assert not failed, failed


def test_exit_after_backward_on_both_devices_and_with_work_left():
    result = run_python("""
import torch
for index in range(torch.openreg.device_count()):
    x = torch.randn(8, device=f"openreg:{index}", requires_grad=True)
    (x * x).sum().backward()
pending = torch.randn(256, 256, device="openreg") @ torch.randn(256, 256, device="openreg")
""")
    assert result.returncode == 0, result.stderr[-500:]


def test_exit_hook_leaves_a_cpu_only_program_alone():
    # Registered before torch is imported, `report` runs after openreg's hook (LIFO): the
    # hook must not have started a device for a program that never used openreg.
    result = run_python("""
import atexit

def report():
    import torch
    started = [torch.openreg._C._has_primary_context(index)
               for index in range(torch.openreg.device_count())]
    print("openreg started:", torch.openreg.is_initialized() or any(started))

atexit.register(report)
import torch
x = torch.randn(4, requires_grad=True)
(x * 2).sum().backward()
""")
    assert result.returncode == 0, result.stderr
    assert "openreg started: False" in result.stdout, result.stdout
