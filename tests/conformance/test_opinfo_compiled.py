"""OpInfo under torch.compile: a representative set of ops compiled by Inductor on openreg.

For each op, its first samples (float32) run through ``torch.compile`` on the CPU and on
openreg; the openreg result must match the compiled CPU result as strictly as the eager
suite compares (values, dtypes, shapes, strides, device: ``opinfo_harness.compare``) and
the eager CPU result in value. The ops cover Inductor's pointwise, reduction, softmax /
normalisation, indexing, concatenation and extern (matmul) paths. Compiles are the cost,
so the set is small and each op compiles at most ``SAMPLES`` graphs per device.
"""

from __future__ import annotations

import pytest
import torch
import torch._dynamo
from torch.testing._internal.common_methods_invocations import op_db
from torch.utils._pytree import tree_map_only

import opinfo_harness as harness

COMPILED_OPS = (
    "add", "mul", "sin", "exp", "sigmoid", "where", "clamp", "sum", "mean", "amax",
    "softmax", "log_softmax", "nn.functional.layer_norm", "nn.functional.gelu", "cat",
    "index_select", "matmul",
)
SAMPLES = 2
OPS = list({op.full_name: op for op in op_db if op.full_name in COMPILED_OPS}.values())


def test_the_selection_is_all_there():
    assert sorted(op.full_name for op in OPS) == sorted(COMPILED_OPS)


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.full_name)
def test_compiled_forward(op):
    torch._dynamo.reset()
    checker = harness.OpChecker(op)
    compiled = torch.compile(lambda *args, **kwargs: op(*args, **kwargs), dynamic=False)
    tried = 0
    for sample in checker.samples(requires_grad=False):
        if tried == SAMPLES:
            break
        cpu, dev = checker.copies(sample)
        try:
            eager = op(cpu.input, *cpu.args, **cpu.kwargs)
        except Exception:
            continue  # the CPU rejects the sample: not counted, as in the eager suite
        expected = compiled(cpu.input, *cpu.args, **cpu.kwargs)
        actual = compiled(dev.input, *dev.args, **dev.kwargs)
        harness.compare(expected, actual, checker.tolerance, device=dev.device())
        torch.testing.assert_close(tree_map_only(torch.Tensor, harness.to_host, actual), eager)
        tried += 1
    assert tried > 0, "no sample runs on the CPU"
